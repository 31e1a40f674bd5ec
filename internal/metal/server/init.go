package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/share"
	"github.com/veil-project/veil/internal/metal/twopc"
	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/server"
)

// Files in a Metal server directory.
const (
	FileDB         = "metal.db"
	FileConfig     = "metal.json"      // role, endpoint, parameters
	FilePeerCred   = "peer.cred"       // Server 2 writes it; Server 1 keeps a copy
	FileDeployment = "deployment.json" // Server 1 writes it, for clients
	stateVersion   = "metal-1"
)

// PeerCred is what Server 2 gives Server 1: where it is, its CA, a client certificate for
// the 2PC link, and the deployment's parameters (docs/formats/metal-server.md).
type PeerCred struct {
	Version  int    `json:"version"`
	Endpoint string `json:"endpoint"`
	CA       string `json:"ca"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	Params   string `json:"params"` // hex of access.Params.Encode
}

type config struct {
	Role     int    `json:"role"`
	Endpoint string `json:"endpoint"`
}

// InitOptions say how to create a server directory.
type InitOptions struct {
	Role     int           // 1 or 2
	Endpoint string        // https://HOST:PORT clients (and, for Server 2, Server 1) reach it at
	Hosts    []string      // certificate names (default 127.0.0.1, localhost)
	Params   access.Params // Server 2 only: the deployment's parameters
	PeerCred []byte        // Server 1 only: Server 2's peer.cred
}

// validity of the certificates made here; ServerCertValidity is the server certificate's
// (the `cert` command's default).
const (
	validity           = 10 * 365 * 24 * time.Hour
	ServerCertValidity = validity
)

// Init creates a server directory: CA and certificate, the initial 2PC state (fresh key
// shares), and Server 2's peer.cred or Server 1's deployment.json.
func Init(dir string, o InitOptions) error {
	if _, err := os.Stat(filepath.Join(dir, FileConfig)); err == nil {
		return fmt.Errorf("%s already holds a Metal server; refusing to overwrite it", dir)
	}
	if o.Role != 1 && o.Role != 2 {
		return fmt.Errorf("role must be 1 or 2, not %d", o.Role)
	}
	if !strings.HasPrefix(o.Endpoint, "https://") {
		return errors.New("endpoint must be an https:// URL")
	}
	if len(o.Hosts) == 0 {
		o.Hosts = []string{"127.0.0.1", "localhost"}
	}
	var peer PeerCred
	if o.Role == 1 {
		if err := json.Unmarshal(o.PeerCred, &peer); err != nil || peer.Version != 1 {
			return errors.New("peer credential: not a Metal Server 2 peer.cred")
		}
		p, err := decodeParams(peer.Params)
		if err != nil {
			return err
		}
		o.Params = p
	}
	if err := o.Params.Check(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, _, err := pki.InitDir(dir, fmt.Sprintf("veil metal server %d CA", o.Role), fmt.Sprintf("veil metal server %d", o.Role), o.Hosts, validity, validity)
	if err != nil {
		return err
	}
	db, err := server.OpenState(filepath.Join(dir, FileDB), "metal server", stateVersion, time.Second)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := access.NewStore(db)
	if err != nil {
		return err
	}
	if _, err := access.Init(st, twopc.Role(o.Role), o.Params, rand.Reader); err != nil {
		return err
	}
	if _, err := share.LoadKeys(db, o.Role, rand.Reader); err != nil { // Paillier key pair, AMK and BMK shares
		return err
	}
	if o.Role == 2 {
		cl, err := ca.IssueClient("metal-server1", validity)
		if err != nil {
			return err
		}
		peer = PeerCred{Version: 1, Endpoint: o.Endpoint, CA: string(ca.PEM), Cert: string(cl.CertPEM), Key: string(cl.KeyPEM), Params: encodeParams(o.Params)}
		if err := writeJSON(filepath.Join(dir, FilePeerCred), peer, 0o600); err != nil {
			return err
		}
	} else {
		if err := os.WriteFile(filepath.Join(dir, FilePeerCred), o.PeerCred, 0o600); err != nil {
			return err
		}
		d := access.Deployment{Version: 1, Server1: o.Endpoint, CA1: string(ca.PEM), Server2: peer.Endpoint, CA2: peer.CA}
		if err := writeJSON(filepath.Join(dir, FileDeployment), d, 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, FileConfig), config{Role: o.Role, Endpoint: o.Endpoint}, 0o644)
}

func writeJSON(path string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), mode, true)
}

func encodeParams(p access.Params) string { return hex.EncodeToString(p.Encode()) }

func decodeParams(s string) (access.Params, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return access.Params{}, errors.New("peer credential: parameters are not hex")
	}
	return access.DecodeParams(b)
}

// ListenAddr is the host:port of the endpoint the server in dir was initialized with (an
// all-in-one deployment listens there).
func ListenAddr(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileConfig))
	if err != nil {
		return "", err
	}
	var c config
	if err := json.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s: %w", FileConfig, err)
	}
	return strings.TrimPrefix(c.Endpoint, "https://"), nil
}

// DeploymentParams are the parameters the server in dir was initialized with (from its
// peer.cred; Server 2 wrote it, Server 1 keeps a copy).
func DeploymentParams(dir string) (access.Params, error) {
	b, err := os.ReadFile(filepath.Join(dir, FilePeerCred))
	if err != nil {
		return access.Params{}, err
	}
	var peer PeerCred
	if err := json.Unmarshal(b, &peer); err != nil || peer.Version != 1 {
		return access.Params{}, fmt.Errorf("%s: not a version-1 peer credential", FilePeerCred)
	}
	return decodeParams(peer.Params)
}
