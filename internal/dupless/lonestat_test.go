package dupless

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLonePutLooksUpNamesNotDirectory: a lone put (no lock) looks up its file's two names
// in the destination directory (is it a directory? a previous version?) instead of listing
// the directory, whose listing grows with every file in it; it still refuses a name stored
// as a directory and still replaces a previous version.
func TestLonePutLooksUpNamesNotDirectory(t *testing.T) {
	local := newBackend(t)
	kb := &kindsCondBE{kindsBatchBE{kindsBE{Backend: local}}, &condBE{Backend: local}}
	be := kindsAbsentBE{kb}
	c := devices(t, be)()
	ctx := context.Background()
	src := t.TempDir()
	put := func(name string, data []byte) error {
		p := filepath.Join(src, name)
		write(t, p, data)
		s, err := c.Put(ctx, []string{p}, "d")
		if err == nil {
			err = s.Err()
		}
		return err
	}
	for i := 0; i < 5; i++ {
		if err := put("f"+itoa(i), randBytes(4096, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	before := kb.snapshot()
	if err := put("new", randBytes(4096, 99)); err != nil {
		t.Fatal(err)
	}
	after := kb.snapshot()
	if n := after["list"] - before["list"]; n != 0 {
		t.Errorf("a lone put listed %d directories, want 0 (its names looked up)", n)
	}
	if n := after["batch"] - before["batch"]; n != 1 || after["delete"] != before["delete"] {
		t.Errorf("a lone put made %d batches and %d deletes, want 1 and 0 (no lock)", n, after["delete"]-before["delete"])
	}
	// Its two names and its folder d (not a file) are answered by the root it builds on,
	// not looked up (loneFromRoot).
	if n := after["stat"] - before["stat"]; n != 0 {
		t.Errorf("a lone put of a new file made %d stats, want 0", n)
	}
	// A previous version is found and replaced.
	changed := randBytes(4096, 100)
	before = kb.snapshot()
	if err := put("f1", changed); err != nil {
		t.Fatal(err)
	}
	if n := kb.snapshot()["stat"] - before["stat"]; n != 0 {
		t.Errorf("a lone put of a changed file made %d stats, want 0 (the root lists its record)", n)
	}
	got := filepath.Join(t.TempDir(), "got")
	if s, err := c.Get(ctx, "d/f1", got); err != nil || s.Err() != nil {
		t.Fatalf("get: %v %v", err, s.Err())
	}
	if b, _ := os.ReadFile(got); !bytes.Equal(b, changed) {
		t.Error("the changed file's get gives other bytes")
	}
	// A name stored as a directory is refused.
	tree := filepath.Join(t.TempDir(), "sub")
	write(t, filepath.Join(tree, "x"), []byte("x"))
	if s, err := c.Put(ctx, []string{tree}, "d"); err != nil || s.Err() != nil {
		t.Fatalf("put tree: %v %v", err, s.Err())
	}
	if err := put("sub", []byte("a file")); err == nil || !strings.Contains(err.Error(), "stored as a directory") {
		t.Errorf("a lone put onto a directory's name: %v, want refused as a directory", err)
	}
	// Objects no root lists (a crashed command's, say) at the file's record, at a
	// directory of its name, at a folder's record: the lock-free batch, which requires
	// them absent, is refused, and the put goes under the lock, which looks the names up
	// on the service and answers as it always did.
	orphan := func(dir, name string) { // a record object dir/name
		encDir, _ := c.keys.encPath(dir)
		encName, _ := c.keys.encName(name)
		if err := local.Put(ctx, encDir, encName+keySuffix, bytes.NewReader([]byte("not a record")), 12); err != nil {
			t.Fatal(err)
		}
	}
	orphan("d", "orphan")
	before = kb.snapshot()
	err := put("orphan", []byte("data"))
	if n := kb.snapshot()["list"] - before["list"]; n == 0 || err != nil {
		t.Errorf("a lone put over a record no root lists: %v, %d listings; want put under the lock (which lists), and stored", err, n)
	}
	sameFile(t, c, filepath.Join(src, "orphan"), "d/orphan")
	orphan("d/odir", "x")
	if err := put("odir", []byte("data")); err == nil || !strings.Contains(err.Error(), "stored as a directory") {
		t.Errorf("a lone put onto a directory no root lists: %v, want refused as a directory", err)
	}
	orphan("", "ofile")
	p0 := filepath.Join(src, "h")
	write(t, p0, []byte("h"))
	if s, err := c.Put(ctx, []string{p0}, "ofile"); err == nil && s.Err() == nil || !strings.Contains(fmt.Sprint(err, s.Err()), "ofile is a stored file") {
		t.Errorf("a lone put into a folder whose record no root lists: %v %v, want refused", err, s.Err())
	}
	// A folder of the destination that is a stored file is refused, as before.
	p := filepath.Join(src, "g")
	write(t, p, []byte("g"))
	if s, err := c.Put(ctx, []string{p}, "d/f2"); err == nil && s.Err() == nil || !strings.Contains(fmt.Sprint(err, s.Err()), "d/f2 is a stored file") {
		t.Errorf("a lone put into a stored file d/f2: %v %v, want refused", err, s.Err())
	}
}
