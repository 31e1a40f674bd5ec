package client

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/paillier"
	"github.com/veil-project/veil/internal/metal/share"
)

// ShareRecord is the profile's Metal-SHARE identity: the keys enrolment gave (for the
// profile's first account), the servers' Paillier keys, the next anonym index, and the
// broadcast-list cursor.
type ShareRecord struct {
	ID        uint64 `json:"id"`
	AK        string `json:"anonym_key"`
	BK        string `json:"broadcast_key"`
	PK1       string `json:"paillier1"`
	PK2       string `json:"paillier2"`
	NextIndex uint32 `json:"next_anonym"`
	Cursor    uint64 `json:"list_from"`
}

// ReceivedRecord is a capability received through the broadcast list.
type ReceivedRecord struct {
	Capability string `json:"capability"`
	File       uint64 `json:"file"`
	Perm       string `json:"perm"` // "r", "w" or "rw"
	Anonym     uint32 `json:"anonym"`
}

// PermString is "r", "w" or "rw".
func PermString(p ac.Perm) string {
	s := ""
	if p&ac.Read != 0 {
		s += "r"
	}
	if p&ac.Write != 0 {
		s += "w"
	}
	return s
}

// SetShare records the enrolment's keys and the servers' Paillier keys.
func (p *Profile) SetShare(k share.UserKeys, pk1, pk2 *paillier.PublicKey) {
	p.Share = &ShareRecord{ID: k.ID, AK: hex.EncodeToString(k.AK[:]), BK: hex.EncodeToString(k.BK[:]),
		PK1: hex.EncodeToString(pk1.Bytes()), PK2: hex.EncodeToString(pk2.Bytes())}
}

// ShareKeys returns the profile's sharing keys and the servers' Paillier keys.
func (p *Profile) ShareKeys() (share.UserKeys, *paillier.PublicKey, *paillier.PublicKey, error) {
	s := p.Share
	if s == nil {
		return share.UserKeys{}, nil, nil, errors.New("no sharing keys in this profile (run veil metal anonym enroll)")
	}
	k := share.UserKeys{ID: s.ID}
	ak, e1 := hex.DecodeString(s.AK)
	bk, e2 := hex.DecodeString(s.BK)
	b1, e3 := hex.DecodeString(s.PK1)
	b2, e4 := hex.DecodeString(s.PK2)
	if errors.Join(e1, e2, e3, e4) != nil || len(ak) != 16 || len(bk) != 16 {
		return share.UserKeys{}, nil, nil, fmt.Errorf("%s: sharing keys are corrupt", ProfileFile)
	}
	copy(k.AK[:], ak)
	copy(k.BK[:], bk)
	pk1, err1 := paillier.ParsePublicKey(b1)
	pk2, err2 := paillier.ParsePublicKey(b2)
	if err := errors.Join(err1, err2); err != nil {
		return share.UserKeys{}, nil, nil, fmt.Errorf("%s: %w", ProfileFile, err)
	}
	return k, pk1, pk2, nil
}

// AddReceived records a received capability. One capability is kept per file: the new
// one replaces the recorded one unless the recorded one already grants everything the new
// one does and more (capabilities are bearer tokens, so a narrower share revokes nothing,
// and the entries of one download come in shuffled order: a read-only entry must not
// discard a read+write capability for the same file).
func (p *Profile) AddReceived(r share.Received) {
	rec := ReceivedRecord{Capability: hex.EncodeToString(r.Capability), File: r.File, Perm: PermString(r.Perm), Anonym: r.Index}
	for i, old := range p.Received {
		if old.File == r.File {
			if op := permOf(old.Perm); op&r.Perm != r.Perm || op == r.Perm {
				p.Received[i] = rec
			}
			return
		}
	}
	p.Received = append(p.Received, rec)
}

// permOf is PermString's inverse (0 for anything else).
func permOf(s string) ac.Perm {
	switch s {
	case "r":
		return ac.Read
	case "w":
		return ac.Write
	case "rw":
		return ac.Read | ac.Write
	}
	return 0
}

// receivedFor returns the received capability for file id, if any.
func (p *Profile) receivedFor(id uint64) ([]byte, bool) {
	for _, r := range p.Received {
		if r.File == id {
			c, err := hex.DecodeString(r.Capability)
			return c, err == nil && len(c) == ac.CapabilityLen
		}
	}
	return nil, false
}

// NewAnonym makes the profile's next anonym (offline) and advances the index (the caller
// saves the profile).
func (p *Profile) NewAnonym(rnd io.Reader) (share.Anonym, uint32, error) {
	k, pk1, pk2, err := p.ShareKeys()
	if err != nil {
		return share.Anonym{}, 0, err
	}
	index := p.Share.NextIndex
	a, err := share.NewAnonym(k, index, pk1, pk2, rnd)
	if err != nil {
		return share.Anonym{}, 0, err
	}
	p.Share.NextIndex++
	return a, index, nil
}

// Receive downloads the broadcast list from the profile's cursor, records what is
// addressed to it and advances the cursor (the caller saves the profile). expired counts
// epochs deleted by the server before this profile downloaded them.
func (c *Client) Receive(ctx context.Context, p *Profile) (got []share.Received, entries int, expired uint64, err error) {
	k, _, _, err := p.ShareKeys()
	if err != nil {
		return nil, 0, 0, err
	}
	capability, err := p.accountCapability()
	if err != nil {
		return nil, 0, 0, err
	}
	got, lr, n, err := c.receiveList(ctx, capability, k.BK, p.Share.Cursor, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	if lr.First > p.Share.Cursor {
		expired = lr.First - p.Share.Cursor
	}
	for _, r := range got {
		p.AddReceived(r)
	}
	p.Share.Cursor = lr.Next
	return got, int(n), expired, nil
}

// accountCapability is the credential of a list download: the enrolled account's
// capability (the account whose first id is the sharing ID), else any account's.
func (p *Profile) accountCapability() ([]byte, error) {
	if len(p.Accounts) == 0 {
		return nil, errors.New("receiving needs an account of this profile (veil metal account create)")
	}
	first := p.Accounts[0].First
	for _, a := range p.Accounts {
		if p.Share != nil && a.First == p.Share.ID {
			first = a.First
		}
	}
	return p.CapabilityFor(first)
}

// EnrollProfile stores in p the sharing keys of account capability and both servers' Paillier
// keys (the caller saves the profile).
func (c *Client) EnrollProfile(ctx context.Context, p *Profile, capability []byte) error {
	k, err := c.Enroll(ctx, capability)
	if err != nil {
		return err
	}
	pk1, pk2, err := c.ShareKeys(ctx)
	if err != nil {
		return err
	}
	p.SetShare(k, pk1, pk2)
	return nil
}
