package dupless

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// sync --exclude with a path pattern ("cache/*", "a/b"): the walk skips the excluded
// folder, and so must the stored side, or what is stored below it is listed "removed" and
// sync deletes it although it is still local. Found by review: excludedStored matched
// each part with the whole relative path, never the prefix the walk matched.
func TestSyncExcludePathPattern(t *testing.T) {
	for _, pat := range []string{"a/b", "cache/*"} {
		t.Run(pat, func(t *testing.T) {
			be := newBackend(t)
			master := NewMasterKey()
			plain, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
			defer plain.Close()
			src := filepath.Join(t.TempDir(), "d")
			write(t, filepath.Join(src, "a", "b", "c"), []byte("kept"))
			write(t, filepath.Join(src, "cache", "x", "y"), []byte("kept too"))
			write(t, filepath.Join(src, "top"), []byte("top"))
			mustPut(t, plain, src, "")
			ex, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3, Exclude: []string{pat}})
			defer ex.Close()
			chs, err := ex.DiffLocal(ctx, src, "d")
			if err != nil {
				t.Fatal(err)
			}
			if len(chs) != 0 {
				t.Errorf("diff --local --exclude %s = %v; want nothing (the excluded entries are left out on both sides)", pat, changeList(chs))
			}
			if _, err := ex.Sync(ctx, src, "", false); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if sum, err := plain.Get(ctx, "d", out); err != nil || sum.Err() != nil {
				t.Logf("get: %v %v", err, sum.Err())
			}
			for _, p := range []string{"a/b/c", "cache/x/y"} {
				if _, err := os.Stat(filepath.Join(out, p)); err != nil {
					t.Errorf("after sync --exclude %s, d/%s (still local) is gone from the store: %v", pat, p, err)
				}
			}
		})
	}
}

// onLockBE runs hook once, when a command writes its lock object.
type onLockBE struct {
	storage.Backend
	once sync.Once
	hook func()
}

func (b *onLockBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if dir == locksDir && b.hook != nil {
		b.once.Do(b.hook)
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// sync decides what to remove from a diff taken before its lock and its put's walk; a file
// that is local again when the put walks (an editor's save by rename) is stored by the put
// and must not then be removed. Found by review: the sync succeeded and the store lacked
// a file that was local.
func TestSyncKeepsFileLocalAgain(t *testing.T) {
	inner := newBackend(t)
	be := &onLockBE{Backend: inner}
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "b"), []byte("b"))
	mustPut(t, c, src, "")
	os.Rename(filepath.Join(src, "b"), filepath.Join(src, "b~")) // an editor's save: b moved away...
	s, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3, Exclude: []string{"*~"}})
	defer s.Close()
	be.once = sync.Once{}
	be.hook = func() { os.WriteFile(filepath.Join(src, "b"), []byte("b, new version"), 0o644) } // ...and written anew
	res, err := s.Sync(ctx, src, "", false)
	if err != nil || res.Put.Err() != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "d")
	if sum, err := c.Get(ctx, "d", out); err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	if got, err := os.ReadFile(filepath.Join(out, "b")); err != nil || string(got) != "b, new version" {
		t.Fatalf("sync reported success (put %d files) but the stored d/b is %q, %v; want the local file", res.Put.Files, got, err)
	}
}
