package dupless

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Folders veil creates without being asked to (the parents of mkdir's folder, put --to's
// destination, a file mv's new parent) get a record as mkdir's folder does: mode 0755 and
// the time they were made. Found by review: they had none, and get restored them 0700,
// ls --json showed mode 0 and year 1, and ls -l d?????????.
func TestImplicitFoldersHaveRecords(t *testing.T) {
	_, dev := newGateBE(t) // a lone put goes without the lock here
	c := dev()
	start := time.Now().Add(-time.Second)
	dir := t.TempDir()
	one := filepath.Join(dir, "one")
	write(t, one, []byte("one"))
	if err := c.Mkdir(ctx, "m/k/d"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, one, "p/q")       // a lone put
	mustPut(t, c, dir, "r/s")       // a folder's
	mustPut(t, dev(), one, "p/q/z") // a lone put into a recorded folder, then a new one
	if err := c.Move(ctx, "p/q/one", "v/w/one"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"m", "m/k", "m/k/d", "p", "p/q", "p/q/z", "r", "r/s", "v", "v/w"} {
		es, err := dev().List(ctx, filepath.Dir(p), true)
		if filepath.Dir(p) == "." {
			es, err = dev().List(ctx, "", true)
		}
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range es {
			if e.Path != p {
				continue
			}
			found = true
			if e.Err != "" || e.Mode != fs.ModeDir|0o755 || e.ModTime.Before(start) || e.ModTime.After(time.Now()) {
				t.Errorf("%s: mode %v, time %v, error %q; want drwxr-xr-x made now", p, e.Mode, e.ModTime, e.Err)
			}
		}
		if !found {
			t.Errorf("%s not listed: %v", p, es)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := dev().Get(ctx, "v", out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(out, "w")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("get of v: v/w %v %v, want 0755", fi, err)
	}
	if res, err := dev().Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check: %+v %v", res, err)
	}
}

// A put that has nothing to store (its local paths are missing) makes no folder: found by
// review, 'veil put missing --to new/sub' reported the missing file and still published a
// snapshot holding the empty folders new and new/sub.
func TestPutOfNothingMakesNoFolder(t *testing.T) {
	_, dev := newGateBE(t)
	c := dev()
	one := filepath.Join(t.TempDir(), "one")
	write(t, one, []byte("one"))
	mustPut(t, c, one, "")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, locals := range [][]string{{missing}, {missing, missing + "2"}} { // lone, and not
		s, err := dev().Put(ctx, locals, "new/sub")
		if err != nil || len(s.Errors) != len(locals) {
			t.Fatalf("put of missing files: %v %+v", err, s.Errors)
		}
	}
	es, err := dev().List(ctx, "", false)
	if err != nil || len(es) != 1 || es[0].Path != "one" {
		t.Fatalf("stored after puts of nothing: %+v %v", es, err)
	}
}

// mkdir of a stored folder, or of a folder below it, keeps the folder's record: found in
// session 15, 'veil mkdir d' of a folder put from disk (0700, its local time) made it 0755
// dated the mkdir.
func TestMkdirKeepsAFoldersRecord(t *testing.T) {
	_, dev := newGateBE(t)
	c := dev()
	d := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(d, "f"), []byte("f"))
	then := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(d, then, then); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, d, "")
	for _, p := range []string{"d", "d/new"} {
		if err := dev().Mkdir(ctx, p); err != nil {
			t.Fatal(err)
		}
		es, err := dev().List(ctx, "", true)
		if err != nil || len(es) != 1 || es[0].Mode != fs.ModeDir|0o700 || !es[0].ModTime.Equal(then) {
			t.Fatalf("after mkdir %s: %+v %v, want d drwx------ of %v", p, es, err, then)
		}
	}
}
