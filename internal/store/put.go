package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
)

// Put receives r into a temporary file while hashing it, makes the content durable as the
// blob named by that hash (once, whoever uploads it), and points dir/name at it in one
// transaction. The answer is the same whether or not the content was already stored.
func (n *Namespace) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if err := checkPath(dir, name); err != nil {
		return err
	}
	s := n.s
	what := storage.Join(dir, name)
	if size > s.cfg.MaxObjectSize {
		return fmt.Errorf("put %s: %d bytes, limit %d: %w", what, size, s.cfg.MaxObjectSize, storage.ErrTooLarge)
	}
	start := time.Now()
	f, err := os.CreateTemp(s.tmpDir, "up-*")
	if err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	tmp := f.Name()
	s.active.Store(tmp, struct{}{})
	defer func() {
		f.Close()
		os.Remove(tmp)
		s.active.Delete(tmp)
	}()
	h := sha256.New()
	body := storage.ExactReader(io.LimitReader(ctxReader{ctx, r}, s.cfg.MaxObjectSize+1), size)
	got, err := io.Copy(io.MultiWriter(f, h), body)
	if err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	if got > s.cfg.MaxObjectSize {
		return fmt.Errorf("put %s: more than %d bytes: %w", what, s.cfg.MaxObjectSize, storage.ErrTooLarge)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	var sum [32]byte
	h.Sum(sum[:0])

	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	if err := s.blobs.commit(ctx, sum, tmp, got); err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	now := time.Now().UnixNano()
	err = s.db.Batch(func(tx *bolt.Tx) error {
		b, err := n.bucket(tx)
		if err != nil {
			return err
		}
		if err := ensureDirs(b, dir, now); err != nil {
			return err
		}
		old, ok, err := getEntry(b, dir, name)
		if err != nil {
			return err
		}
		delta := got
		if ok {
			if old.isDir() {
				return storage.ErrIsDir
			}
			if err := decref(tx, old.hash); err != nil {
				return err
			}
			delta -= old.size
		}
		if err := incref(tx, sum, got); err != nil {
			return err
		}
		if err := addUsed(tx, n.user, delta); err != nil {
			return err
		}
		return b.Put(nsKey(dir, name), entry{kind: kindFile, size: got, modTime: now, hash: sum}.marshal())
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	s.metrics.observe("put", got, start)
	return nil
}

// Get returns dir/name's content; reading it fails with storage.ErrIntegrity if the stored
// bytes do not hash to what the server recorded.
func (n *Namespace) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	rc, _, err := n.open(ctx, dir, name)
	return rc, err
}

func (n *Namespace) open(ctx context.Context, dir, name string) (io.ReadCloser, entry, error) {
	if err := checkPath(dir, name); err != nil {
		return nil, entry{}, err
	}
	what := storage.Join(dir, name)
	var e entry
	s := n.s
	s.commitMu.RLock() // gc cannot remove the blob between lookup and open
	defer s.commitMu.RUnlock()
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := n.bucket(tx)
		if err != nil {
			return err
		}
		var ok bool
		if e, ok, err = getEntry(b, dir, name); err != nil {
			return err
		}
		switch {
		case !ok:
			return storage.ErrNotFound
		case e.isDir():
			return storage.ErrIsDir
		}
		return nil
	})
	if err != nil {
		return nil, entry{}, fmt.Errorf("get %s: %w", what, err)
	}
	rc, size, err := s.blobs.open(ctx, e.hash)
	if err != nil {
		s.metrics.integrity.Inc()
		return nil, entry{}, fmt.Errorf("get %s: content %x unreadable (%v): %w", what, e.hash[:8], err, storage.ErrIntegrity)
	}
	if size != e.size {
		rc.Close()
		s.metrics.integrity.Inc()
		return nil, entry{}, fmt.Errorf("get %s: content %x has %d bytes, recorded %d: %w", what, e.hash[:8], size, e.size, storage.ErrIntegrity)
	}
	s.metrics.observe("get", e.size, time.Now())
	return &verifyReader{rc: rc, h: sha256.New(), want: e.hash, left: e.size, what: what, onFail: s.metrics.integrity.Inc}, e, nil
}

// verifyReader hashes what it yields and fails at the end, with ErrIntegrity, unless the
// content matches the recorded hash and length.
type verifyReader struct {
	rc     io.ReadCloser
	h      hash.Hash
	want   [32]byte
	left   int64
	what   string
	err    error
	onFail func()
}

func (v *verifyReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.left -= int64(n)
	if v.left < 0 || errors.Is(err, io.EOF) {
		var got [32]byte
		v.h.Sum(got[:0])
		if v.left != 0 || subtle.ConstantTimeCompare(got[:], v.want[:]) != 1 {
			v.onFail()
			v.err = fmt.Errorf("get %s: content does not match its hash %x: %w", v.what, v.want[:8], storage.ErrIntegrity)
			return 0, v.err
		}
	}
	if err != nil {
		v.err = err
	}
	return n, err
}

func (v *verifyReader) Close() error { return v.rc.Close() }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
