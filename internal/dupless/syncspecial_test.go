package dupless

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// A FIFO stored by sync is no change to the next diff --local, and one whose mode or time
// changed is. Found by review: compareLocal compared every non-symlink with a file's
// record, so a stored FIFO was "modified" after each sync and a dry run never came clean.
func TestDiffLocalSpecialUnchanged(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a"))
	pipe := filepath.Join(src, "pipe")
	if err := syscall.Mkfifo(pipe, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx, src, "", false); err != nil {
		t.Fatal(err)
	}
	if chs, err := c.DiffLocal(ctx, src, "d"); err != nil || len(chs) != 0 {
		t.Fatalf("diff --local after sync = %v %v; want no change", changeList(chs), err)
	}
	os.Chmod(pipe, 0o600)
	if chs, err := c.DiffLocal(ctx, src, "d"); err != nil || len(chs) != 1 || chs[0].Path != "d/pipe" {
		t.Fatalf("diff --local after chmod of the FIFO = %v %v; want d/pipe", changeList(chs), err)
	}
	if _, err := c.Sync(ctx, src, "", false); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(pipe, time.Now(), time.Now().Add(time.Hour))
	if chs, err := c.DiffLocal(ctx, src, "d"); err != nil || len(chs) != 1 || chs[0].Path != "d/pipe" {
		t.Fatalf("diff --local after touching the FIFO = %v %v; want d/pipe", changeList(chs), err)
	}
}
