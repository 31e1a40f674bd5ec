package dupless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/testutil"
)

// rmHooks are run once each, when armed: onMove before a move (conditional or not) is
// made, onExists after a move answered that its destination exists, onRead after a read
// of the object at readPath, before the answer reaches the command.
type rmHooks struct {
	readPath                 string
	onExists, onRead, onMove func()
}

func (h *rmHooks) moving() {
	if f := h.onMove; f != nil {
		h.onMove = nil
		f()
	}
}

func (h *rmHooks) moved(err error) error {
	if f := h.onExists; f != nil && errors.Is(err, storage.ErrExists) {
		h.onExists = nil
		f()
	}
	return err
}

func (h *rmHooks) read(dir, name string, rc io.ReadCloser, err error) (io.ReadCloser, error) {
	if err != nil || storage.Join(dir, name) != h.readPath || h.onRead == nil {
		return rc, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	f := h.onRead
	h.onRead = nil
	f()
	return io.NopCloser(bytes.NewReader(data)), nil
}

// rmHookBE is the storage service's client with rmHooks (it moves conditionally only).
type rmHookBE struct {
	*remote.Backend
	*rmHooks
}

func (b rmHookBE) MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error {
	b.moving()
	return b.moved(b.Backend.MoveMatch(ctx, srcDir, srcName, dstDir, dstName, match))
}

func (b rmHookBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	rc, err := b.Backend.Get(ctx, dir, name)
	return b.read(dir, name, rc, err)
}

// rmHookLocal is a local directory backend with rmHooks.
type rmHookLocal struct {
	*local.Backend
	*rmHooks
}

func (b rmHookLocal) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	b.moving()
	return b.moved(b.Backend.Move(ctx, srcDir, srcName, dstDir, dstName))
}

func (b rmHookLocal) MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error {
	b.moving()
	return b.moved(b.Backend.MoveMatch(ctx, srcDir, srcName, dstDir, dstName, match))
}

func (b rmHookLocal) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	rc, err := b.Backend.Get(ctx, dir, name)
	return b.read(dir, name, rc, err)
}

// rm deletes a record only while it holds the bytes rm found there, so that a record
// another command writes meanwhile stays, and is the file. Found by review: once the
// conditional move answered that the version's kept copy exists already (a command
// stopped after keeping it), the record was deleted without a condition; so was an
// object rm read and found not to be the version the root lists. A command that wrote
// there in between (rm's lock lost while it stalled: a laptop asleep, then --break-lock
// or the lease) had its record deleted, though its root listed it: the file could not be
// read. The record is now taken aside by a conditional move and deleted there. Found by
// the session 17 review ("the version": the put comes before rm's one conditional move,
// which is refused; rm then read b's record, found it is not the version its root lists
// and deleted it): a record that opens is now kept as its version instead.
func TestRemoveKeepsLaterWrite(t *testing.T) {
	testRemoveKeepsLaterWrite(t, func(t *testing.T) (storage.Backend, storage.Backend, *rmHooks) {
		rs, h := serveCounting(t, false), &rmHooks{}
		return rmHookBE{rs.be, h}, rs.ns, h
	})
}

// TestRemoveKeepsLaterWriteLocal is TestRemoveKeepsLaterWrite on a local directory
// backend shared by two devices (a folder on a network share): it had no conditional
// moves before session 17, and rm deleted b's record (when the version was kept already,
// or the object was not the version its root lists). It now moves conditionally under an
// flock.
func TestRemoveKeepsLaterWriteLocal(t *testing.T) {
	testRemoveKeepsLaterWrite(t, func(t *testing.T) (storage.Backend, storage.Backend, *rmHooks) {
		lb, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		h := &rmHooks{}
		return rmHookLocal{lb, h}, lb, h
	})
}

// testRemoveKeepsLaterWrite runs the three races on the backend open makes: the one the
// devices use (with hooks), and raw, the same store behind the client's back.
func testRemoveKeepsLaterWrite(t *testing.T, open func(t *testing.T) (be, raw storage.Backend, h *rmHooks)) {
	for _, at := range []string{"kept already", "not the version", "the version"} {
		t.Run(at, func(t *testing.T) {
			be, raw, h := open(t)
			device := memDevices(t, be)
			a, b := device(), device()
			dir := t.TempDir()
			fa, fu, fb := filepath.Join(dir, "a", "f"), filepath.Join(dir, "u", "f"), filepath.Join(dir, "b", "f")
			write(t, fa, randBytes(3000, 61))
			write(t, fu, randBytes(3100, 62)) // another size: a put of a file of a's size and mtime tick, without a put cache, is "unchanged" (size, mtime and mode decide)
			write(t, fb, randBytes(3000, 63))
			c := a()
			mustPut(t, c, fa, "")
			if err := c.refresh(ctx); err != nil {
				t.Fatal(err)
			}
			encDir, encName, err := c.encFile("f")
			if err != nil {
				t.Fatal(err)
			}
			recName := encName + keySuffix
			rec := func() []byte { t.Helper(); return testutil.GetObject(t, raw, encDir, recName) }
			store := func(dir, name string, b []byte) {
				t.Helper()
				if err := raw.Put(ctx, dir, name, bytes.NewReader(b), int64(len(b))); err != nil {
					t.Fatal(err)
				}
			}
			racer := func() {
				// rm stalls here past its lock's lease: its lock and its prune mark are
				// taken away (as --break-lock does), and device b puts f meanwhile.
				locks, err := raw.List(ctx, locksDir)
				if err != nil {
					t.Error(err)
				}
				for _, l := range locks {
					if err := raw.Delete(ctx, locksDir, l.Name); err != nil {
						t.Error(err)
					}
				}
				if err := raw.Delete(ctx, veilDir, pruneMark); err != nil && !errors.Is(err, storage.ErrNotFound) {
					t.Error(err)
				}
				if _, err := b().Put(ctx, []string{fb}, ""); err != nil {
					t.Errorf("the put between rm's look and its delete: %v", err)
				}
			}
			switch at {
			case "kept already":
				r := rec()
				vd, vn := versionLocation(sha256.Sum256(r))
				store(vd, vn, r) // a command stopped after keeping this version
				h.onExists = racer
			case "the version":
				h.onMove = racer
			default:
				old := rec()
				mustPut(t, a(), fu, "") // the root lists u's record; the object is then a's again
				store(encDir, recName, old)
				h.readPath, h.onRead = storage.Join(encDir, recName), racer
			}
			if _, err := a().Remove(ctx, "f", false); err != nil {
				t.Fatalf("rm: %v", err)
			}
			if h.onExists != nil || h.onRead != nil || h.onMove != nil {
				t.Fatal("rm never came to the point of the race")
			}
			sameFile(t, device()(), fb, "f")
			if at == "not the version" {
				return // u's version was overwritten by the test itself: check names it
			}
			if res, err := device()().Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
				t.Fatalf("check after the race: %v, %+v", err, res)
			}
		})
	}
}
