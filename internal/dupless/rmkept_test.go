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
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/testutil"
)

// rmHookBE is the storage service's client with a hook run once, when armed, after a
// conditional move answered that its destination exists (onExists) or after a read of
// the object at readPath (onRead), before the answer reaches the command, or before a
// conditional move is sent (onMove).
type rmHookBE struct {
	*remote.Backend
	readPath                 string
	onExists, onRead, onMove func()
}

func (b *rmHookBE) MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error {
	if f := b.onMove; f != nil {
		b.onMove = nil
		f()
	}
	err := b.Backend.MoveMatch(ctx, srcDir, srcName, dstDir, dstName, match)
	if errors.Is(err, storage.ErrExists) && b.onExists != nil {
		f := b.onExists
		b.onExists = nil
		f()
	}
	return err
}

func (b *rmHookBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
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
	for _, at := range []string{"kept already", "not the version", "the version"} {
		t.Run(at, func(t *testing.T) {
			rs := serveCounting(t, false)
			be := &rmHookBE{Backend: rs.be}
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
			rec := func() []byte {
				t.Helper()
				return testutil.GetObject(t, rs.ns, encDir, recName)
			}
			store := func(dir, name string, b []byte) {
				t.Helper()
				if err := rs.ns.Put(ctx, dir, name, bytes.NewReader(b), int64(len(b))); err != nil {
					t.Fatal(err)
				}
			}
			racer := func() {
				// rm stalls here past its lock's lease: its lock and its prune mark are
				// taken away (as --break-lock does), and device b puts f meanwhile.
				locks, err := rs.ns.List(ctx, locksDir)
				if err != nil {
					t.Error(err)
				}
				for _, l := range locks {
					if err := rs.ns.Delete(ctx, locksDir, l.Name); err != nil {
						t.Error(err)
					}
				}
				if err := rs.ns.Delete(ctx, veilDir, pruneMark); err != nil {
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
		})
	}
}
