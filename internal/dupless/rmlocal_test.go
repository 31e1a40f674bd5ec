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
	"github.com/veil-project/veil/internal/testutil"
)

// rmHookLocal is a local directory backend with rmHookBE's hooks: onExists runs once
// after a move (conditional or not) answered that its destination exists, onRead once
// after a read of readPath, before the answer reaches the command.
type rmHookLocal struct {
	*local.Backend
	readPath                 string
	onExists, onRead, onMove func()
}

// moving runs onMove once, before a move (conditional or not) is made.
func (b *rmHookLocal) moving() {
	if f := b.onMove; f != nil {
		b.onMove = nil
		f()
	}
}

func (b *rmHookLocal) exists(err error) {
	if errors.Is(err, storage.ErrExists) && b.onExists != nil {
		f := b.onExists
		b.onExists = nil
		f()
	}
}

func (b *rmHookLocal) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	b.moving()
	err := b.Backend.Move(ctx, srcDir, srcName, dstDir, dstName)
	b.exists(err)
	return err
}

// MoveMatch is the local backend's conditional move; a local backend without one (before
// session 17) answers as a service older than conditional moves does, and the client
// moves after reading, as it did on that backend.
func (b *rmHookLocal) MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error {
	mm, ok := any(b.Backend).(storage.MatchMover)
	if !ok {
		return storage.ErrNoConditions
	}
	b.moving()
	err := mm.MoveMatch(ctx, srcDir, srcName, dstDir, dstName, match)
	b.exists(err)
	return err
}

func (b *rmHookLocal) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	rc, err := b.Backend.Get(ctx, dir, name)
	if err != nil || storage.Join(dir, name) != b.readPath || b.onRead == nil {
		return rc, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	f := b.onRead
	b.onRead = nil
	f()
	return io.NopCloser(bytes.NewReader(data)), nil
}

// TestRemoveKeepsLaterWrite on a local directory backend shared by two devices (a
// folder on a network share, a synced folder): rm stalls past its lock's lease between
// its look at a record and its delete, and device b puts the file meanwhile. Found by
// the session 17 review of "rm deletes unconditionally on backends without conditional
// moves": the directory backend had none, so rm deleted b's record (when the version
// was kept already, or the object was not the version its root lists) though b's root
// listed it, and the file could not be read. The backend now moves conditionally under
// an flock, and rm leaves b's record.
func TestRemoveKeepsLaterWriteLocal(t *testing.T) {
	for _, at := range []string{"kept already", "not the version", "the version"} {
		t.Run(at, func(t *testing.T) {
			lb, err := local.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			be := &rmHookLocal{Backend: lb}
			device := memDevices(t, be)
			a, b := device(), device()
			dir := t.TempDir()
			fa, fu, fb := filepath.Join(dir, "a", "f"), filepath.Join(dir, "u", "f"), filepath.Join(dir, "b", "f")
			write(t, fa, randBytes(3000, 61))
			write(t, fu, randBytes(3000, 62))
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
			rec := func() []byte { t.Helper(); return testutil.GetObject(t, lb, encDir, recName) }
			store := func(dir, name string, b []byte) {
				t.Helper()
				if err := lb.Put(ctx, dir, name, bytes.NewReader(b), int64(len(b))); err != nil {
					t.Fatal(err)
				}
			}
			racer := func() {
				// rm stalls here past its lock's lease: its lock and its prune mark are
				// taken away (as --break-lock does), and device b puts f meanwhile.
				locks, err := lb.List(ctx, locksDir)
				if err != nil {
					t.Error(err)
				}
				for _, l := range locks {
					if err := lb.Delete(ctx, locksDir, l.Name); err != nil {
						t.Error(err)
					}
				}
				if err := lb.Delete(ctx, veilDir, pruneMark); err != nil && !errors.Is(err, storage.ErrNotFound) {
					t.Error(err)
				}
				if _, err := b().Put(ctx, []string{fb}, ""); err != nil {
					t.Errorf("the put between rm's look and its delete: %v", err)
				}
			}
			if at == "kept already" {
				r := rec()
				vd, vn := versionLocation(sha256.Sum256(r))
				store(vd, vn, r) // a command stopped after keeping this version
				be.onExists = racer
			} else if at == "the version" {
				be.onMove = racer
			} else {
				old := rec()
				mustPut(t, a(), fu, "") // the root lists u's record; the object is then a's again
				store(encDir, recName, old)
				be.readPath, be.onRead = storage.Join(encDir, recName), racer
			}
			if _, err := a().Remove(ctx, "f", false); err != nil {
				t.Fatalf("rm: %v", err)
			}
			if be.onExists != nil || be.onRead != nil || be.onMove != nil {
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
