package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/paillier"
	"github.com/veil-project/veil/internal/metal/share"
)

// Metal-SHARE (paper Section 6): enrolment, SendCapability and ReceiveCapability.

// ShareKeys fetches each server's Paillier public key (over that server's pinned TLS),
// retried as a call while the server restarts (retry).
func (c *Client) ShareKeys(ctx context.Context) (pk1, pk2 *paillier.PublicKey, err error) {
	var pk [2]*paillier.PublicKey
	for i := range pk {
		var b []byte
		err := c.retry(ctx, func() (err error) {
			b, err = c.do(ctx, i, "GET", "/v1/share/key", nil)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if pk[i], err = paillier.ParsePublicKey(b); err != nil {
			return nil, nil, fmt.Errorf("metal server %d: %w", i+1, err)
		}
	}
	return pk[0], pk[1], nil
}

// Enroll obtains the account's anonym and broadcast keys (inside 2PC, from the account
// capability).
func (c *Client) Enroll(ctx context.Context, capability []byte) (share.UserKeys, error) {
	to1, to2, err := share.EnrollRequest(capability, rand.Reader)
	if err != nil {
		return share.UserKeys{}, err
	}
	r, err := c.both(ctx, "POST", "/v1/share/enroll", to1, to2)
	if err != nil {
		return share.UserKeys{}, err
	}
	return share.FinishEnroll(r[0], r[1])
}

// SendCapability grants the owner of req.To a capability for req.File (share.ErrRefused
// if the servers refused).
func (c *Client) SendCapability(ctx context.Context, req share.SendRequest, pk1, pk2 *paillier.PublicKey) error {
	to1, to2, err := req.Split(pk1, pk2, rand.Reader)
	if err != nil {
		return err
	}
	r, err := c.both(ctx, "POST", "/v1/share/send", to1, to2)
	if err != nil {
		return err
	}
	return share.FinishSend(r[0], r[1])
}

// ReceiveCapabilities downloads Server 1's broadcast list from epoch from on, with
// capability (an account's: the download's credential) and returns the entries that open
// under bk, with the list's cursors and every entry (Entries). Receive is the same
// without keeping the entries.
func (c *Client) ReceiveCapabilities(ctx context.Context, capability []byte, bk [16]byte, from uint64) ([]share.Received, share.ListReply, error) {
	var all []byte
	got, lr, _, err := c.receiveList(ctx, capability, bk, from, func(e []byte) { all = append(all, e...) })
	if err != nil {
		return nil, share.ListReply{}, err
	}
	for i := 0; i < len(all); i += share.EntryLen {
		lr.Entries = append(lr.Entries, all[i:i+share.EntryLen:i+share.EntryLen])
	}
	return got, lr, nil
}

// receiveList downloads the list from epoch from on and tries every entry under bk as it
// arrives (keep, if not nil, sees each entry too). The list is linear in the sends of the
// retention period (paper §6.2), so it is neither read whole into memory nor cut at
// Client.do's reply limit: a receive needs the memory of one entry, whatever its length.
// n is the number of entries. Each server gets its XOR share of capability, under one
// request id: they check it inside 2PC before Server 1 sends the list.
// A download answered busy is sent again (retry): nothing was received then.
func (c *Client) receiveList(ctx context.Context, capability []byte, bk [16]byte, from uint64, keep func([]byte)) (got []share.Received, lr share.ListReply, n uint64, err error) {
	err = c.retry(ctx, func() error {
		got, lr, n, err = c.receiveListOnce(ctx, capability, bk, from, keep)
		return err
	})
	return got, lr, n, err
}

func (c *Client) receiveListOnce(ctx context.Context, capability []byte, bk [16]byte, from uint64, keep func([]byte)) (got []share.Received, lr share.ListReply, n uint64, err error) {
	o, err := share.NewOpener(bk)
	if err != nil {
		return nil, share.ListReply{}, 0, err
	}
	to1, to2, err := share.ListRequest(capability, rand.Reader)
	if err != nil {
		return nil, share.ListReply{}, 0, err
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, share.ListReply{}, 0, err
	}
	ctx, cancel := context.WithCancel(ctx) // one server failing releases the other's wait
	defer cancel()
	err2 := make(chan error, 1)
	go func() {
		_, err := c.do(ctx, 1, "POST", "/v1/share/list", bytes.NewReader(append(id[:], to2...)))
		if err != nil {
			cancel()
		}
		err2 <- err
	}()
	err = c.stream(ctx, 0, "POST", fmt.Sprintf("/v1/share/list?from=%d", from), append(id[:], to1...), func(r io.Reader) error {
		var err error
		lr, n, err = share.ReadListReply(r, func(e []byte) error {
			if keep != nil {
				keep(e)
			}
			rc, ok, err := o.Open(e)
			if ok {
				got = append(got, rc)
			}
			return err
		})
		return err
	})
	if err != nil {
		cancel()
	}
	// One line: Server 1's error, unless Server 2's came first and cancelled it.
	if e2 := <-err2; e2 != nil && (err == nil || ctx.Err() != nil && errors.Is(err, context.Canceled)) {
		err = e2
	}
	if err != nil {
		return nil, share.ListReply{}, 0, err
	}
	return got, lr, n, nil
}
