package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// forgetOnReadBE is a storage on which, right after a reader gets root seq, a forget
// drops that root (leaving gap, a gap mark, or nothing) and a prune then deletes its
// base, as another device's 'veil forget' and 'veil prune' may between a reader's two GETs.
type forgetOnReadBE struct {
	storage.Backend
	seq  uint64
	base string
	gap  bool
}

func (b *forgetOnReadBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	rc, err := b.Backend.Get(ctx, dir, name)
	if err == nil && dir == rootsDir && name == rootName(b.seq) && b.base != "" {
		data, rerr := io.ReadAll(rc)
		rc.Close()
		if rerr != nil {
			return nil, rerr
		}
		if b.gap {
			err = b.Backend.Put(ctx, rootsDir, name, bytesReader(nil), 0)
		} else {
			err = b.Backend.Delete(ctx, rootsDir, name)
		}
		if err == nil {
			err = b.Backend.Delete(ctx, basesDir, b.base)
		}
		b.base = ""
		return io.NopCloser(bytesReader(data)), err
	}
	return rc, err
}

// A snapshot listing (or log, or prune's read of the roots) that reads a root just before
// another device's forget drops it and prune deletes its base skips that root as it skips
// one dropped before it read it: the root is gone, not damaged. Found by review: the
// base's absence was an integrity error, so the listing failed.
func TestRootDroppedWhileItsBaseIsRead(t *testing.T) {
	rootForms(t, 8<<10, 1) // every root a new base: forgetting a root frees its base
	for _, gap := range []bool{false, true} {
		t.Run(fmt.Sprint("gap mark ", gap), func(t *testing.T) {
			be := newBackend(t)
			master := NewMasterKey()
			open := func(be storage.Backend) *Client {
				c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				return c
			}
			w := open(be)
			if _, err := w.Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
				t.Fatal(err)
			}
			var bases []string
			for i := range 2 {
				src := filepath.Join(t.TempDir(), fmt.Sprint("f", i))
				write(t, src, randBytes(100, uint64(i)))
				if _, err := w.Put(ctx, []string{src}, ""); err != nil {
					t.Fatal(err)
				}
				bases = append(bases, baseName(w.view.root.base.id))
			}
			r := open(&forgetOnReadBE{Backend: be, seq: 2, base: bases[0], gap: gap})
			snaps, err := r.Snapshots(ctx)
			if err != nil {
				t.Fatalf("snapshots: %v; want 1 and 3 (2 dropped as it was read)", err)
			}
			if len(snaps) != 2 || snaps[0].Seq != 1 || snaps[1].Seq != 3 {
				t.Fatalf("snapshots %+v, want 1 and 3", snaps)
			}
			// A base missing while its root is still stored is damage, as before.
			if err := be.Delete(ctx, basesDir, bases[1]); err != nil {
				t.Fatal(err)
			}
			if _, err := open(be).fetchRootSeq(ctx, 3); !errors.Is(err, ErrIntegrity) {
				t.Fatalf("root 3 without its base: %v, want an integrity error", err)
			}
		})
	}
}
