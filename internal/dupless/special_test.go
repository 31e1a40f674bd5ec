package dupless

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FIFOs are stored as metadata (version 3 records) and recreated by get, with their mode
// and time; a socket is skipped, counted by its kind (putclash_test.go).
func TestSpecialFilesStoredAsMetadata(t *testing.T) {
	c := newClient(t, newBackend(t), nil)
	dir := filepath.Join(t.TempDir(), "d")
	os.MkdirAll(dir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "pipe"), 0o640)
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sum, err := c.Put(ctx, []string{dir}, "")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Special != 1 || len(sum.Errors) != 0 || sum.NotStored["socket"] != 1 {
		t.Fatalf("put: %+v", sum)
	}
	es, err := c.List(ctx, "d/pipe", true)
	if err != nil || len(es) != 1 || es[0].Mode.Type() != fs.ModeNamedPipe || es[0].Mode.Perm() != 0o640 {
		t.Fatalf("ls: %+v %v", es, err)
	}
	out := filepath.Join(t.TempDir(), "d")
	if s, err := c.Get(ctx, "d", out); err != nil || s.Err() != nil || s.Special != 1 {
		t.Fatalf("get: %+v %v", s, err)
	}
	want, _ := os.Lstat(filepath.Join(dir, "pipe"))
	got, err := os.Lstat(filepath.Join(out, "pipe"))
	if err != nil || got.Mode() != want.Mode() || !got.ModTime().Equal(want.ModTime()) {
		t.Fatalf("restored FIFO: %v %v (want %v %v)", got.Mode(), err, want.Mode(), want.ModTime())
	}
	// Again, onto the FIFO that is there now: kept or replaced, never an error.
	if s, err := c.Get(ctx, "d", out); err != nil || s.Err() != nil {
		t.Fatalf("second get: %+v %v", s, err)
	}
}
