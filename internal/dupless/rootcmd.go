package dupless

import (
	"context"
	"encoding/hex"
	"errors"
	"time"
)

// RootInfo describes the namespace's newest tree root.
type RootInfo struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	SHA256  string    `json:"sha256"`
	Records int       `json:"records"`
}

// Root returns the newest tree root, checked as every command checks it (nil if none).
func (c *Client) Root(ctx context.Context) (*RootInfo, error) {
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	c.view.mu.Lock()
	r := c.view.root
	c.view.mu.Unlock()
	if r == nil {
		return nil, nil
	}
	return &RootInfo{Seq: r.Seq, Time: time.Unix(0, r.Time), SHA256: hex.EncodeToString(r.sum[:]), Records: len(r.Entries)}, nil
}

// AcceptRoot makes this device trust the storage service's newest root as it is now, even
// if it is older than one seen before (after a restore of the service from a backup, say).
func (c *Client) AcceptRoot(ctx context.Context) (*RootInfo, error) {
	if err := c.checkKey(ctx); err != nil {
		return nil, err
	}
	root, err := c.listRoot(ctx) // the service's word as it is: no remembered number
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, errors.New("the storage location holds no tree root to accept")
	}
	save := c.mem.Save
	if a, ok := c.mem.(interface{ Accept(uint64, [32]byte) error }); ok {
		save = a.Accept // moves back, where Save keeps a newer root
	}
	if err := save(root.Seq, root.sum); err != nil {
		return nil, err
	}
	return c.Root(ctx)
}
