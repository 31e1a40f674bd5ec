package dupless

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// sync removes what its diff listed, nothing more: a file another device stored in a
// folder that was deleted locally, after this sync's diff and before its lock, stays (sync
// never saw it, its dry run never listed it). Found by review: the folder was removed
// whole, with what was in it when the removal ran.
func TestSyncKeepsWhatItDidNotList(t *testing.T) {
	inner := newBackend(t)
	be := &onLockBE{Backend: inner}
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	other, _ := New(inner, master, Options{Keys: mle.LocalKeys{}, Jobs: 3}) // another device
	defer other.Close()
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "sub", "x"), []byte("x"))
	mustPut(t, c, src, "")
	os.RemoveAll(filepath.Join(src, "sub"))
	theirs := filepath.Join(t.TempDir(), "sub")
	write(t, filepath.Join(theirs, "new.txt"), []byte("stored by the other device"))
	be.hook = func() { mustPut(t, other, theirs, "d") } // as this sync takes its lock
	res, err := c.Sync(ctx, src, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Cat(ctx, "d/sub/new.txt", io.Discard); err != nil {
		t.Errorf("sync (changes %v) removed d/sub/new.txt, which another device stored after its diff: %v", changeList(res.Changes), err)
	}
	if err := other.Cat(ctx, "d/sub/x", io.Discard); err == nil {
		t.Error("d/sub/x, deleted locally and listed by the diff, is still stored")
	}
}

// An entry matching --exclude in a folder deleted locally is not removed with the folder:
// "entries matching --exclude are neither stored nor removed". Found by review: the folder
// was removed whole, its excluded entries with it.
func TestSyncKeepsExcludedInRemovedFolder(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	plain, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer plain.Close()
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "sub", "x"), []byte("x"))
	write(t, filepath.Join(src, "sub", "keep.tmp"), []byte("excluded"))
	mustPut(t, plain, src, "")
	os.RemoveAll(filepath.Join(src, "sub"))
	ex, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3, Exclude: []string{"*.tmp"}})
	defer ex.Close()
	if _, err := ex.Sync(ctx, src, "", false); err != nil {
		t.Fatal(err)
	}
	if err := plain.Cat(ctx, "d/sub/keep.tmp", io.Discard); err != nil {
		t.Errorf("sync --exclude '*.tmp' removed d/sub/keep.tmp with its folder: %v", err)
	}
	if err := plain.Cat(ctx, "d/sub/x", io.Discard); err == nil {
		t.Error("d/sub/x, deleted locally, is still stored")
	}
}

// A file deleted locally that another device stored anew after this sync's diff stays:
// sync removes the version its diff saw, not one it never saw. Found by review: it
// removed whatever was stored under the name when its removal ran.
func TestSyncKeepsFileChangedSinceDiff(t *testing.T) {
	inner := newBackend(t)
	be := &onLockBE{Backend: inner}
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	other, _ := New(inner, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer other.Close()
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "b"), []byte("b"))
	mustPut(t, c, src, "")
	os.Remove(filepath.Join(src, "b"))
	theirs := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(theirs, "b"), []byte("b, the other device's new version"))
	be.hook = func() { mustPut(t, other, theirs, "") }
	res, err := c.Sync(ctx, src, "", false)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	if err := other.Cat(ctx, "d/b", &got); err != nil || got.String() != "b, the other device's new version" {
		t.Errorf("sync (changes %v, %d removed) left d/b %q, %v; want the other device's version, stored after the diff", changeList(res.Changes), res.Removed, got.String(), err)
	}
	if res.Removed != 0 {
		t.Errorf("sync reports %d entries removed; it removed none", res.Removed)
	}
}
