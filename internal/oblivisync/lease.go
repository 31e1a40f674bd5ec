package oblivisync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// The lease is the one-writer rule kept in the backend itself (docs/formats/oblivisync.md,
// "lease"): a small fixed-size sealed file naming the writer that holds the backend and
// when it last renewed. A writer creates it before its first epoch, renews it in every
// epoch (so the write trace stays the same whatever the workload: k files, the
// superblock and the lease), checks before every epoch that it is still its own, and
// removes it when it stops. What the cloud learns from it is only that a writer is
// active, which the epochs already show.
//
// Take-over rule: a lease whose renewal is older than its TTL (by the taker's clock) is
// abandoned (a crashed writer, or a machine gone to sleep) and may be taken; a lease
// naming this state directory's own writer id is taken at once (the state directory's
// flock proves its previous holder is gone).
const (
	leaseName    = "lease"
	leaseVersion = 1
	leasePlain   = writerIDLen + 8 + 8 + 4 + 8 + 1 + leaseHostMax
	leaseLen     = 1 + 24 + leasePlain + 16
	leaseHostMax = 63
	// DefaultLeaseTTL is how long a writer's lease outlives its last renewal.
	DefaultLeaseTTL = 2 * time.Minute
)

// lease is a decoded lease file.
type lease struct {
	Writer   [writerIDLen]byte
	Acquired time.Time
	Renewed  time.Time
	TTL      time.Duration
	Epoch    uint64 // the backend's epoch at the renewal
	Host     string // the holder's host name, for messages
}

func leaseAAD(id [idLen]byte) []byte {
	return append([]byte("veil-osync-lease-v1"), id[:]...)
}

func (l *lease) encode() []byte {
	b := append([]byte(nil), l.Writer[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(l.Acquired.UnixMilli()))
	b = binary.BigEndian.AppendUint64(b, uint64(l.Renewed.UnixMilli()))
	b = binary.BigEndian.AppendUint32(b, uint32(l.TTL.Milliseconds()))
	b = binary.BigEndian.AppendUint64(b, l.Epoch)
	h := l.Host
	if len(h) > leaseHostMax {
		h = h[:leaseHostMax]
	}
	b = append(b, byte(len(h)))
	b = append(b, h...)
	return append(b, make([]byte, leasePlain-len(b))...)
}

// sealLease seals l for this backend under a fresh nonce.
func (b *backend) sealLease(l *lease) []byte {
	return sealLease(&b.keys.lease, b.id, l, randomBytes(24))
}

func sealLease(key *[32]byte, id [idLen]byte, l *lease, nonce []byte) []byte {
	aead, _ := chacha20poly1305.NewX(key[:])
	out := append([]byte{leaseVersion}, nonce...)
	return aead.Seal(out, nonce, l.encode(), leaseAAD(id))
}

// openLease authenticates and decodes a lease file.
func openLease(key *[32]byte, id [idLen]byte, b []byte) (*lease, error) {
	if len(b) != leaseLen || b[0] != leaseVersion {
		return nil, fmt.Errorf("%w: lease is not a version %d file of %d bytes", ErrFormat, leaseVersion, leaseLen)
	}
	aead, _ := chacha20poly1305.NewX(key[:])
	p, err := aead.Open(nil, b[1:25], b[25:], leaseAAD(id))
	if err != nil {
		return nil, fmt.Errorf("%w: lease failed authentication (tampered or from another backend)", ErrIntegrity)
	}
	return decodeLease(p)
}

// decodeLease decodes an authenticated lease plaintext.
func decodeLease(p []byte) (*lease, error) {
	if len(p) != leasePlain {
		return nil, fmt.Errorf("%w: lease plaintext is %d bytes, want %d", ErrFormat, len(p), leasePlain)
	}
	be := binary.BigEndian
	l := &lease{Acquired: time.UnixMilli(int64(be.Uint64(p[16:]))), Renewed: time.UnixMilli(int64(be.Uint64(p[24:]))),
		TTL: time.Duration(be.Uint32(p[32:])) * time.Millisecond, Epoch: be.Uint64(p[36:])}
	copy(l.Writer[:], p)
	n := int(p[44])
	if n > leaseHostMax || !allZero(p[45+n:]) {
		return nil, fmt.Errorf("%w: lease host name malformed", ErrFormat)
	}
	l.Host = string(p[45 : 45+n])
	return l, nil
}

// readLease returns the backend's lease, nil if there is none.
func (b *backend) readLease() (*lease, error) {
	raw, err := os.ReadFile(filepath.Join(b.dir, leaseName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lease: %w", err)
	}
	l, err := openLease(&b.keys.lease, b.id, raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; if no writer is running anywhere, delete it", filepath.Join(b.dir, leaseName), err)
	}
	return l, nil
}

// acquireLease makes this writer the backend's lease holder, or says who holds it.
// A fresh lease is created with link(2), which fails if another writer created one
// first; a take-over replaces the file and reads it back.
func (b *backend) acquireLease(me *lease, now time.Time) error {
	img := b.sealLease(me)
	path := filepath.Join(b.dir, leaseName)
	for try := 0; try < 2; try++ {
		cur, err := b.readLease()
		if err != nil {
			return err
		}
		if cur == nil {
			err := b.createExclusive(path, img)
			if errors.Is(err, fs.ErrExist) {
				continue // another writer was faster: look at its lease
			}
			return err
		}
		if cur.Writer != me.Writer && now.Before(cur.Renewed.Add(cur.TTL)) {
			return fmt.Errorf("%w: writer %x on host %q holds it (renewed %s ago at epoch %d, expires in %s); stop that writer first, or if it crashed wait until its lease expires (mounting again with that writer's own --state takes it over at once)",
				ErrLeased, cur.Writer[:4], cur.Host, now.Sub(cur.Renewed).Round(time.Second), cur.Epoch, cur.Renewed.Add(cur.TTL).Sub(now).Round(time.Second))
		}
		if err := b.writeFile(path, img); err != nil {
			return err
		}
		return b.checkLeaseOurs(me)
	}
	return fmt.Errorf("%w: another writer created the lease at the same moment", ErrLeased)
}

// checkLeaseOurs verifies that the lease still names this writer. A lease that vanished
// (deleted by hand or by the sync service) is created again, exclusively: if another
// writer created one first, that one is checked instead.
func (b *backend) checkLeaseOurs(me *lease) error {
	for try := 0; ; try++ {
		cur, err := b.readLease()
		if err != nil {
			return err
		}
		if cur == nil && try == 0 {
			err := b.createExclusive(filepath.Join(b.dir, leaseName), b.sealLease(me))
			if err == nil || errors.Is(err, fs.ErrExist) {
				continue
			}
			return fmt.Errorf("recreate lease: %w", err)
		}
		if cur == nil {
			return fmt.Errorf("%w: the backend's lease keeps vanishing; stopping", ErrLeased)
		}
		if cur.Writer != me.Writer {
			return fmt.Errorf("%w: writer %x on host %q took over the lease at %s; stopping before writing over its epochs", ErrLeased, cur.Writer[:4], cur.Host, cur.Acquired.UTC().Format(time.RFC3339))
		}
		return nil
	}
}

// renewLease rewrites this writer's lease (once per epoch).
func (b *backend) renewLease(me *lease) error {
	return b.writeFile(filepath.Join(b.dir, leaseName), b.sealLease(me))
}

// releaseLease removes the lease if it is still this writer's.
func (b *backend) releaseLease(id [writerIDLen]byte) {
	if l, err := b.readLease(); err == nil && l != nil && l.Writer == id {
		os.Remove(filepath.Join(b.dir, leaseName))
	}
}
