package dupless

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

func moveList(chs []Change) []string {
	var out []string
	for _, ch := range chs {
		slash := ""
		if ch.IsDir {
			slash = "/"
		}
		s := ch.Symbol() + " "
		if ch.From != "" {
			s += ch.From + slash + " -> "
		}
		s += ch.Path + slash
		out = append(out, s)
	}
	return out
}

// A folder is one move only when everything in it arrived unchanged at its place in a new
// folder that holds nothing else; otherwise its files are moves one by one. A folder
// without files is no move (nothing tells it from another).
func TestDiffFolderMoves(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	for _, n := range []string{"x", "y", "z"} {
		write(t, filepath.Join(src, "f", n), []byte("content of "+n))
	}
	os.MkdirAll(filepath.Join(src, "e1"), 0o755)
	mustPut(t, c, src, "") // 1
	os.Rename(filepath.Join(src, "f"), filepath.Join(src, "g"))
	write(t, filepath.Join(src, "g", "z"), []byte("changed"))
	if _, err := c.Sync(ctx, src, "", false); err != nil { // 2
		t.Fatal(err)
	}
	want := []string{"- d/f/", "- d/f/z", "+ d/g/", "R d/f/x -> d/g/x", "R d/f/y -> d/g/y", "+ d/g/z"}
	if chs, err := c.Diff(ctx, "1", "2", ""); err != nil || !reflect.DeepEqual(moveList(chs), want) {
		t.Fatalf("diff 1 2 = %q %v\nwant %q", moveList(chs), err, want)
	}
	if err := c.Move(ctx, "d/g", "d/h"); err != nil { // 3
		t.Fatal(err)
	}
	if chs, err := c.Diff(ctx, "2", "3", ""); err != nil || !reflect.DeepEqual(moveList(chs), []string{"R d/g/ -> d/h/"}) {
		t.Fatalf("diff 2 3 = %q %v", moveList(chs), err)
	}
	write(t, filepath.Join(src, "w"), []byte("new"))
	mustPut(t, c, filepath.Join(src, "w"), "d/h")     // 4
	if err := c.Move(ctx, "d/h", "d/k"); err != nil { // 5
		t.Fatal(err)
	}
	if err := c.Move(ctx, "d/e1", "d/e2"); err != nil { // 6
		t.Fatal(err)
	}
	want = []string{"- d/e1/", "+ d/e2/", "- d/g/", "+ d/k/", "+ d/k/w", "R d/g/x -> d/k/x", "R d/g/y -> d/k/y", "R d/g/z -> d/k/z"}
	if chs, err := c.Diff(ctx, "2", "6", ""); err != nil || !reflect.DeepEqual(moveList(chs), want) {
		t.Fatalf("diff 2 6 = %q %v\nwant %q", moveList(chs), err, want)
	}
}

// Among many changes only files that kept their name or their folder are read.
func TestPlausibleMoves(t *testing.T) {
	gone := []string{"A/n1.key", "A/n2.key", "B/n3.key"}
	made := []string{"C/n1.key", "A/n9.key", "D/n8.key"}
	g, m := plausibleMoves(gone, made)
	if want := []string{"A/n1.key", "A/n2.key"}; !reflect.DeepEqual(g, want) {
		t.Fatalf("gone %q, want %q", g, want)
	}
	if want := []string{"C/n1.key", "A/n9.key"}; !reflect.DeepEqual(m, want) {
		t.Fatalf("made %q, want %q", m, want)
	}
}

// A diff reads the records of added files only when files were removed too (a move needs
// both).
func TestDiffReadsAddedRecordsOnlyWithRemovals(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "d", "a"), []byte("a"))
	mustPut(t, c, filepath.Join(dir, "d"), "") // 1
	write(t, filepath.Join(dir, "d", "b"), []byte("b"))
	mustPut(t, c, filepath.Join(dir, "d"), "")             // 2
	if _, err := c.Remove(ctx, "d/a", false); err != nil { // 3
		t.Fatal(err)
	}
	encDir, encName, _ := c.encFile("d/b")
	c2, counting := countingClient(t, be, master, storage.Join(encDir, encName+keySuffix))
	if chs, err := c2.Diff(ctx, "1", "2", ""); err != nil || !reflect.DeepEqual(moveList(chs), []string{"+ d/b"}) {
		t.Fatalf("diff 1 2 = %q %v", moveList(chs), err)
	}
	if n := counting.objGets.Swap(0); n != 0 {
		t.Fatalf("diff with additions only read the added record %d times", n)
	}
	if chs, err := c2.Diff(ctx, "1", "3", ""); err != nil || !reflect.DeepEqual(moveList(chs), []string{"- d/a", "+ d/b"}) {
		t.Fatalf("diff 1 3 = %q %v", moveList(chs), err)
	}
	if n := counting.objGets.Load(); n != 1 {
		t.Fatalf("diff with a removal read the added record %d times, want 1", n)
	}
}

// A device node replaced by one with other numbers (a disk image's /dev, a container
// root) is modified, not only its metadata: diff compared a special file's kind, size
// and target but not its device number, and listed the change as metadata (U) when the
// time moved, or not at all (noticed by the session 17 diff work).
func TestDiffDeviceNumberChanged(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	dev := filepath.Join(src, "dev")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o644, 1<<8|3); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			t.Skip("mknod needs root")
		}
		t.Fatal(err)
	}
	mustPut(t, c, src, "") // 1
	if err := os.Remove(dev); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o644, 1<<8|5); err != nil { // /dev/zero's
		t.Fatal(err)
	}
	mustPut(t, c, src, "") // 2: other numbers, the same mode
	if chs, err := c.Diff(ctx, "1", "2", ""); err != nil || !reflect.DeepEqual(moveList(chs), []string{"M d/dev"}) {
		t.Fatalf("diff 1 2 = %q %v; want the device modified", moveList(chs), err)
	}
}
