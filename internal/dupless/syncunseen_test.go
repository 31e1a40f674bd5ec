package dupless

import (
	"io"
	"os"
	"path/filepath"
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
