package invite

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/veil-project/veil/internal/storewire"
)

// Version is the invitation format version.
const Version = 1

// Invite is what a new user needs to start storing files.
type Invite struct {
	Version      int                   `json:"veil_invite"`
	User         string                `json:"user"`
	Storage      string                `json:"storage"`                 // location, e.g. veil://127.0.0.1:7480
	Store        *storewire.Credential `json:"store,omitempty"`         // for veil:// locations
	KSCredential json.RawMessage       `json:"ks_credential,omitempty"` // 'veil keyserver client add' output
}

// Marshal encodes the invitation.
func (i *Invite) Marshal() ([]byte, error) {
	i.Version = Version
	return json.MarshalIndent(i, "", "  ")
}

// Parse decodes and checks an invitation.
func Parse(b []byte) (*Invite, error) {
	var i Invite
	if err := json.Unmarshal(b, &i); err != nil {
		return nil, fmt.Errorf("not a veil invitation: %w", err)
	}
	switch {
	case i.Version != Version:
		return nil, fmt.Errorf("invitation version %d is not supported (want %d)", i.Version, Version)
	case i.Storage == "":
		return nil, errors.New("invitation names no storage location")
	}
	return &i, nil
}
