package storeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// Put receives r while hashing it, makes the content durable as the blob named by that hash
// (once, whoever uploads it), and points dir/name at it in one transaction. Content of at
// most InlineMax bytes goes into the database itself; larger content goes through a
// temporary file into the blob store. The answer is the same whether or not the content
// was already stored.
func (n *Namespace) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	s := n.s
	if err := s.cfg.Limits.checkPath(dir, name); err != nil {
		return err
	}
	what := storage.Join(dir, name)
	if size > s.cfg.MaxObjectSize {
		return fmt.Errorf("put %s: %d bytes, limit %d: %w", what, size, s.cfg.MaxObjectSize, storage.ErrTooLarge)
	}
	if size > InlineMax { // refused before reading: nothing written, nothing left behind
		if _, err := n.reserve(ctx, dir, name, size, false); err != nil {
			return fmt.Errorf("put %s: %w", what, err)
		}
	}
	start := time.Now()
	body := storage.ExactReader(ctx, io.LimitReader(r, s.cfg.MaxObjectSize+1), size)
	var head []byte
	if size <= InlineMax {
		head = make([]byte, min(InlineMax, uint64(size))+1) // size -1: the whole InlineMax
		k, err := readFull(body, head)
		head = head[:k]
		switch {
		case err == io.EOF: // the whole body fits inline
			sum := sha256.Sum256(head)
			c := n.claim(claimCost(dir, name, int64(k)))
			err := s.meta.updateNames(ctx, n.user, linkNames(dir, name), n.link(dir, name, sum, int64(k), head, 0))
			c.release()
			if err != nil {
				return fmt.Errorf("put %s: %w", what, err)
			}
			s.metrics.observe("put", int64(k), start)
			return nil
		case err != nil:
			return fmt.Errorf("put %s: %w", what, err)
		}
	}
	got, err := n.putFile(ctx, dir, name, io.MultiReader(bytes.NewReader(head), body))
	if err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	s.metrics.observe("put", got, start)
	return nil
}

// putFile stores body as a blob (spool) and links dir/name to it.
func (n *Namespace) putFile(ctx context.Context, dir, name string, body io.Reader) (int64, error) {
	var r *reservation
	defer func() { r.release() }() // after the transaction: its bytes are in the user's usage
	sum, got, pin, err := n.s.spool(ctx, body, func(size int64) (err error) {
		r, err = n.reserve(ctx, dir, name, size, true)
		return err
	})
	if err != nil {
		return 0, err
	}
	link := n.link(dir, name, sum, got, nil, pin.gen)
	err = n.s.meta.updateNames(ctx, n.user, linkNames(dir, name), func(t metaTx) error {
		r.charging(t)
		return link(t)
	})
	n.s.settle(sum, pin, err)
	return got, err
}

// settle ends an upload's hold on its blob after the transaction that was to reference
// it (err its outcome). A refused upload's content is removed unless another record
// references it or another upload holds it (metaStore.discard), rather than left for gc:
// before, a batch its transaction refused (a condition that does not hold, a name that is
// a directory or under a file) left its large object behind, as many times as it was
// sent. The removal does not wait for the request's context.
func (s *Service) settle(sum [32]byte, pin blobPin, err error) {
	if err == nil {
		pin.release()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	if err := s.meta.discard(ctx, sum, pin, s.blobs); err != nil {
		s.cfg.Logger.Warn("a refused upload's content is left for gc", "blob", hexName(sum)[:16], "err", err)
	}
}

// spool streams body into a temporary file, fsyncs it, and commits it to the blob store
// as the blob named by its SHA-256, unless fits (if not nil) refuses its size. gc leaves
// that blob alone until pin.release is called, after the transaction that references it
// (with pin.gen).
func (s *Service) spool(ctx context.Context, body io.Reader, fits func(size int64) error) (sum [32]byte, got int64, pin blobPin, err error) {
	f, err := createUpload(s.tmpDir) // locked: gc spares it (tmpfiles.go)
	if err != nil {
		return sum, 0, pin, err
	}
	tmp := f.Name()
	defer func() {
		os.Remove(tmp) // under the lock (a commit renamed it already)
		f.Close()
	}()
	h := sha256.New()
	buf := copyBufs.Get().(*[]byte)
	// onlyReader hides body's WriteTo (a MultiReader's), which would copy through a
	// fresh 32 KiB buffer of its own in small writes.
	got, err = io.CopyBuffer(io.MultiWriter(f, h), onlyReader{body}, *buf)
	copyBufs.Put(buf)
	if err != nil {
		return sum, 0, pin, err
	}
	if got > s.cfg.MaxObjectSize {
		return sum, 0, pin, fmt.Errorf("more than %d bytes: %w", s.cfg.MaxObjectSize, storage.ErrTooLarge)
	}
	if fits != nil {
		if err := fits(got); err != nil {
			return sum, 0, pin, err
		}
	}
	if err := f.Sync(); err != nil { // f stays open, and locked, until the blob is committed
		return sum, 0, pin, err
	}
	h.Sum(sum[:0])
	pin, err = s.meta.hold(ctx, sum, got) // gc must not remove the blob until it is referenced
	if err != nil {
		return sum, 0, blobPin{}, err
	}
	if err := s.blobs.commit(ctx, blobID{sum, pin.key}, tmp, got); err != nil {
		pin.release()
		return sum, 0, blobPin{}, err
	}
	return sum, got, pin, nil
}

// copyBufs are the 1 MiB copy buffers of uploads (putFile) and downloads (handleGet),
// reused: a fresh one per request cost more CPU (zeroing it) than a small object's copy.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// onlyReader is an io.Reader and nothing more.
type onlyReader struct{ io.Reader }

// linkNames are the names link looks up: dir's components and dir/name.
func linkNames(dir, name string) [][2]string {
	var out [][2]string
	parent := ""
	if dir != "" {
		for _, c := range strings.Split(dir, "/") {
			out = append(out, [2]string{parent, c})
			parent = storage.Join(parent, c)
		}
	}
	return append(out, [2]string{dir, name})
}

// link is the transaction that points dir/name at blob sum (recording the blob if new):
// inline content, or content in the blob store held by a pin of generation gen (spool).
func (n *Namespace) link(dir, name string, sum [32]byte, size int64, inline []byte, gen int64) func(metaTx) error {
	now := time.Now().UnixNano()
	return func(t metaTx) error {
		if err := n.ensureDirs(t, dir, now); err != nil {
			return err
		}
		old, ok, err := t.entry(n.user, dir, name)
		if err != nil {
			return err
		}
		delta := size
		if ok {
			if old.isDir() {
				return storage.ErrIsDir
			}
			if err := decrefContent(t, old); err != nil {
				return err
			}
			delta -= old.size
		} else if err := n.addEntry(t, dir, name); err != nil {
			return err
		}
		if size > 0 { // an empty object references no record (emptyContent)
			if err := t.incref(sum, size, inline, gen); err != nil {
				return err
			}
		}
		if err := n.charge(t, delta, 0); err != nil {
			return err
		}
		return t.putEntry(n.user, dir, name, entry{kind: kindFile, size: size, modTime: now, hash: sum})
	}
}

// Get returns dir/name's content; reading it fails with storage.ErrIntegrity if the stored
// bytes do not hash to what the server recorded.
func (n *Namespace) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	rc, _, err := n.open(ctx, dir, name)
	return rc, err
}

func (n *Namespace) open(ctx context.Context, dir, name string) (io.ReadCloser, entry, error) {
	if err := n.s.cfg.Limits.checkPath(dir, name); err != nil {
		return nil, entry{}, err
	}
	what := storage.Join(dir, name)
	var e entry
	var data []byte // inline content
	var key int64   // the content's key in the blob store (blobID)
	s := n.s
	defer s.meta.readHold()() // gc cannot remove the blob between lookup and open
	err := s.meta.view(ctx, func(t metaTx) error {
		var err error
		if e, err = n.lookup(t, dir, name); err != nil {
			return err
		}
		if e.isDir() {
			return storage.ErrIsDir
		}
		if e.size == 0 { // no record needed (emptyContent)
			data = []byte{}
			return nil
		}
		if r, d, ok, err := t.blob(e.hash); err == nil && ok {
			data, key = d, r.key
		}
		return nil
	})
	if err != nil {
		return nil, entry{}, fmt.Errorf("get %s: %w", what, err)
	}
	var rc io.ReadCloser
	var size int64
	if data != nil {
		rc, size = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	} else {
		rc, size, err = s.openRecorded(ctx, blobID{e.hash, key})
	}
	if errors.Is(err, storewire.ErrUnavailable) {
		return nil, entry{}, fmt.Errorf("get %s: %w", what, err)
	}
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

// readFull fills p from r; unlike io.ReadFull it returns io.EOF, and only io.EOF, when r
// ended cleanly before p was full, so a body cut short is never mistaken for a whole one.
func readFull(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k, err := r.Read(p[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// emptyContent is the SHA-256 of no bytes. Since session 16 an empty object (a DupLESS
// lock, a prune or forget mark) references no blob record: its entry (size 0, this hash)
// is all there is, reads need nothing else, and its put and delete change no reference
// count. Before, each one recorded the empty content, which the lock's delete at the end
// of every client command left unreferenced until gc (and every user's lock puts shared
// that one record's row). A store written before kept the record with the count its
// empty objects gave it: opening a bbolt store removes it (upgradeDB), the migration of a
// PostgreSQL database to schema version 5 gives it a count no reference reaches 0 from
// (sqlEmptyRow), and fsck does not compare that count.
var emptyContent = sha256.Sum256(nil)

// decrefContent drops e's reference to its content, if it holds one (emptyContent).
func decrefContent(t metaTx, e entry) error {
	if e.size == 0 {
		return nil
	}
	return t.decref(e.hash)
}
