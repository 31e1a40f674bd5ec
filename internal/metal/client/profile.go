package client

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/access"
)

// ProfileFile is the Metal part of a veil profile directory: the deployment joined and the
// accounts created (their capabilities are bearer secrets: the file is 0600).
const ProfileFile = "metal.json"

// Profile is a user's Metal state (docs/formats/metal-server.md, "Files").
type Profile struct {
	Version    int               `json:"version"`
	Deployment access.Deployment `json:"deployment"`
	Accounts   []AccountRecord   `json:"accounts"`
	Share      *ShareRecord      `json:"share,omitempty"`    // Metal-SHARE keys (shareprofile.go)
	Received   []ReceivedRecord  `json:"received,omitempty"` // capabilities others shared with this profile
}

// AccountRecord is one account: its capability (hex) and file ids.
type AccountRecord struct {
	Capability string `json:"capability"`
	First      uint64 `json:"first"`
	Count      uint32 `json:"count"`
}

// Join starts (or replaces the deployment of) the profile in dir.
func Join(dir string, d access.Deployment) (*Profile, error) {
	p, err := LoadProfile(dir)
	if err != nil {
		p = &Profile{Version: 1}
	} else if p.Deployment.Server1 != d.Server1 && len(p.Accounts) > 0 {
		return nil, errors.New("this profile already holds accounts of another Metal deployment")
	}
	p.Deployment = d
	return p, p.Save(dir)
}

// LoadProfile reads dir's Metal profile.
func LoadProfile(dir string) (*Profile, error) {
	b, err := os.ReadFile(filepath.Join(dir, ProfileFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("no Metal deployment in this profile (run veil metal join DEPLOYMENT-FILE)")
	}
	if err != nil {
		return nil, err
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil || p.Version != 1 {
		return nil, fmt.Errorf("%s: not a version-1 Metal profile", ProfileFile)
	}
	return &p, nil
}

// Save writes the profile atomically.
func (p *Profile) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ProfileFile), append(b, '\n'), 0o600, true)
}

// Add records a new account.
func (p *Profile) Add(a Account) {
	p.Accounts = append(p.Accounts, AccountRecord{Capability: hex.EncodeToString(a.Capability), First: a.First, Count: a.Count})
}

// CapabilityFor returns the capability of the account holding file id.
func (p *Profile) CapabilityFor(id uint64) ([]byte, error) {
	for _, a := range p.Accounts {
		if id >= a.First && id-a.First < uint64(a.Count) {
			c, err := hex.DecodeString(a.Capability)
			if err != nil || len(c) != ac.CapabilityLen {
				return nil, fmt.Errorf("%s: capability of account %d is corrupt", ProfileFile, a.First)
			}
			return c, nil
		}
	}
	if c, ok := p.receivedFor(id); ok {
		return c, nil
	}
	return nil, fmt.Errorf("no capability for file id %d in this profile (veil metal ls lists yours)", id)
}

// A stored file is its length (uint32 LE) then its bytes, zero-padded to the block: so one
// file holds at most BlockSize-4 bytes; a never-written id reads as an empty file.
const lengthPrefix = 4

// MaxFileSize is the largest file one id holds.
func (c *Client) MaxFileSize() int { return c.p.BlockSize - lengthPrefix }

// WriteFile stores data as file id.
func (c *Client) WriteFile(ctx context.Context, capability []byte, id uint64, data []byte) error {
	if len(data) > c.MaxFileSize() {
		return fmt.Errorf("file of %d bytes exceeds this deployment's %d bytes per file id (segmenting over several ids is not built yet)", len(data), c.MaxFileSize())
	}
	blk := binary.LittleEndian.AppendUint32(nil, uint32(len(data)))
	return c.Write(ctx, capability, id, append(blk, data...))
}

// ReadFile returns file id's content.
func (c *Client) ReadFile(ctx context.Context, capability []byte, id uint64) ([]byte, error) {
	blk, err := c.Read(ctx, capability, id)
	if err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(blk)
	if int(n) > c.MaxFileSize() {
		return nil, fmt.Errorf("file id %d does not hold a veil file (length %d)", id, n)
	}
	return blk[lengthPrefix : lengthPrefix+int(n)], nil
}
