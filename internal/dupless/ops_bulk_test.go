package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// putLimitBE fails every record write after the first `left` ones, once armed: a storage
// service that goes away in the middle of a command.
type putLimitBE struct {
	storage.Backend
	armed atomic.Bool
	left  atomic.Int64
}

var errGone = errors.New("storage service went away")

func (b *putLimitBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	if b.armed.Load() && strings.HasSuffix(n, keySuffix) && b.left.Add(-1) < 0 {
		return errGone
	}
	return b.Backend.Put(ctx, d, n, r, s)
}

// An mv of a folder moves its files several at a time; interrupted after some of them, the
// tree root published at its end lists every file under exactly one of its two names, and
// a new client (the next command) reads every file back, with its content, from src or dst.
func TestMoveInterruptedLeavesEveryFileOnce(t *testing.T) {
	for _, left := range []int64{0, 7, 41} {
		t.Run(fmt.Sprint(left), func(t *testing.T) {
			be := &putLimitBE{Backend: newBackend(t)}
			master := NewMasterKey()
			c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 8})
			if err != nil {
				t.Fatal(err)
			}
			local := filepath.Join(t.TempDir(), "tree")
			want := map[string]string{}
			for d := 0; d < 3; d++ {
				for f := 0; f < 20; f++ {
					rel := fmt.Sprintf("d%d/f%d", d, f)
					want[rel] = fmt.Sprintf("content %d %d", d, f)
					write(t, filepath.Join(local, rel), []byte(want[rel]))
				}
			}
			if _, err := c.Put(ctx, []string{local}, ""); err != nil {
				t.Fatal(err)
			}
			be.left.Store(left)
			be.armed.Store(true)
			if err := c.Move(ctx, "tree", "moved"); !errors.Is(err, errGone) {
				t.Fatalf("interrupted mv: %v", err)
			}
			be.armed.Store(false)
			next, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 8, RootCheck: c.opts.RootCheck})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, top := range []string{"tree", "moved"} {
				out := t.TempDir()
				s, err := next.Get(ctx, top, out)
				if errors.Is(err, storage.ErrNotFound) && top == "moved" && left == 0 {
					continue
				}
				if err != nil || s.Err() != nil {
					t.Fatalf("get %s after the interrupted mv: %v %v", top, err, s.Err())
				}
				filepath.Walk(out, func(p string, fi os.FileInfo, _ error) error {
					if fi.Mode().IsRegular() {
						rel, _ := filepath.Rel(out, p)
						if _, dup := got[rel]; dup {
							t.Errorf("%s readable under both names", rel)
						}
						b, _ := os.ReadFile(p)
						got[filepath.ToSlash(rel)] = string(b)
					}
					return nil
				})
			}
			if len(got) != len(want) {
				t.Fatalf("%d of %d files readable after the interrupted mv", len(got), len(want))
			}
			for rel, w := range want {
				if got[rel] != w {
					t.Fatalf("%s = %q, want %q", rel, got[rel], w)
				}
			}
		})
	}
}
