package dupless

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// diff --local (and sync --dry-run) compare a FIFO with its stored record as put does:
// found by a user walkthrough, an unchanged FIFO was always listed as "M" (its record is
// not a file's), even right after a sync. A changed mode or time still shows, as "U".
func TestDiffLocalUnchangedFIFO(t *testing.T) {
	c := newClient(t, newBackend(t), nil)
	dir := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(dir, "f"), []byte("file"))
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(pipe, 0o640)
	if _, err := c.Put(ctx, []string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	chs, err := c.DiffLocal(ctx, dir, "d")
	if err != nil || len(chs) != 0 {
		t.Fatalf("diff --local right after put: %+v %v, want no change", chs, err)
	}
	os.Chmod(pipe, 0o600)
	chs, err = c.DiffLocal(ctx, dir, "d")
	if err != nil || len(chs) != 1 || chs[0].Path != "d/pipe" || chs[0].Kind != "metadata" {
		t.Fatalf("diff --local after chmod: %+v %v, want d/pipe metadata", chs, err)
	}
	os.Chmod(pipe, 0o640)
	later := time.Now().Add(time.Hour)
	os.Chtimes(pipe, later, later)
	chs, err = c.DiffLocal(ctx, dir, "d")
	if err != nil || len(chs) != 1 || chs[0].Kind != "metadata" {
		t.Fatalf("diff --local after touch: %+v %v, want d/pipe metadata", chs, err)
	}
}
