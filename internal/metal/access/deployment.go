package access

import (
	"encoding/json"
	"errors"
	"strings"
)

// Deployment is what a client needs to reach a Metal deployment: both servers' https://
// endpoints and CA certificates (PEM). Server 1's init writes it as deployment.json
// (docs/formats/metal-server.md).
type Deployment struct {
	Version int    `json:"version"`
	Server1 string `json:"server1"`
	CA1     string `json:"ca1"`
	Server2 string `json:"server2"`
	CA2     string `json:"ca2"`
}

// ParseDeployment parses and checks a deployment file.
func ParseDeployment(b []byte) (Deployment, error) {
	var d Deployment
	if err := json.Unmarshal(b, &d); err != nil || d.Version != 1 {
		return Deployment{}, errors.New("metal: not a version-1 Metal deployment file")
	}
	if !strings.HasPrefix(d.Server1, "https://") || !strings.HasPrefix(d.Server2, "https://") || d.CA1 == "" || d.CA2 == "" {
		return Deployment{}, errors.New("metal: deployment file lacks a server's https:// endpoint or CA")
	}
	return d, nil
}
