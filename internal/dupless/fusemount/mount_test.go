package fusemount

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/testutil"
)

// mount stores src with a new client and mounts it; the mount ends with the test.
func mount(t *testing.T, src string) string {
	t.Helper()
	be, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return mountOn(t, be, src)
}

// mountOn is mount storing on be.
func mountOn(t *testing.T, be storage.Backend, src string) string {
	t.Helper()
	return startMount(t, be, src).dir
}

// mounted is a running mount: stop ends it (as Ctrl-C does), done is closed when Run has
// returned; snapshots is the count Run gave Config.Ready.
type mounted struct {
	dir       string
	stop      context.CancelFunc
	done      chan struct{}
	snapshots int
}

// startMount is mountOn, for a test that ends the mount itself.
func startMount(t *testing.T, be storage.Backend, src string) *mounted {
	t.Helper()
	return startMountWith(t, be, src, func(*Config) {})
}

// startMountWith is startMount with the Config set changes.
func startMountWith(t *testing.T, be storage.Backend, src string, set func(*Config)) *mounted {
	t.Helper()
	requireFUSE(t)
	c := newClient(t, be)
	putTree(t, c, src)
	return runMount(t, c, set)
}

// requireFUSE skips (or fails, under VEIL_REQUIRE_INTEGRATION) without FUSE.
func requireFUSE(t testing.TB) {
	t.Helper()
	testutil.RequireBinary(t, "fusermount3")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testutil.Missing(t, "no /dev/fuse")
	}
}

// newClient is a client of a new master key on be, closed with the test.
func newClient(t testing.TB, be storage.Backend) *dupless.Client {
	t.Helper()
	c, err := dupless.New(be, dupless.NewMasterKey(), dupless.Options{Keys: mle.LocalKeys{}, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// putTree stores src with c (one snapshot).
func putTree(t testing.TB, c *dupless.Client, src string) {
	t.Helper()
	sum, err := c.Put(context.Background(), []string{src}, "")
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runMount mounts what c stores, with the Config set changes; the mount ends with the test.
func runMount(t testing.TB, c *dupless.Client, set func(*Config)) *mounted {
	t.Helper()
	m := &mounted{dir: filepath.Join(t.TempDir(), "mnt"), done: make(chan struct{})}
	os.Mkdir(m.dir, 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	ready := make(chan struct{})
	var runErr error
	cfg := Config{Client: c, Mountpoint: m.dir}
	set(&cfg)
	cfg.Ready = func(n int) { m.snapshots = n; close(ready) }
	go func() {
		runErr = Run(ctx, cfg)
		close(m.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			exec.Command("fusermount3", "-u", "-z", m.dir).Run()
		}
	})
	select {
	case <-ready:
	case <-m.done:
		t.Fatalf("mount: %v", runErr)
	case <-time.After(30 * time.Second):
		t.Fatal("mount not ready")
	}
	return m
}

// Every entry of a mounted folder reads back as the kind it is stored as: a FIFO is a FIFO
// (its lookup used to fail: EIO), and readdir of a folder larger than one batch types
// every entry as its lookup does.
func TestMountEntryKinds(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "file"), []byte("content"), 0o644)
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o640); err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		if err := os.Symlink("file", filepath.Join(src, fmt.Sprintf("link-%03d-with-a-name-long-enough-to-fill-pages", i))); err != nil {
			t.Fatal(err)
		}
	}
	mnt := mount(t, src)
	dir := filepath.Join(mnt, "current", "src")
	fi, err := os.Lstat(filepath.Join(dir, "pipe"))
	if err != nil || fi.Mode()&fs.ModeNamedPipe == 0 || fi.Mode().Perm() != 0o440 {
		t.Errorf("stored FIFO in the mount: %v %v", fi, err)
	}
	es, err := os.ReadDir(dir)
	if err != nil || len(es) != 402 {
		t.Fatalf("readdir: %d entries, %v", len(es), err)
	}
	wrong := 0
	for _, e := range es {
		want := fs.ModeSymlink
		switch e.Name() {
		case "file":
			want = 0
		case "pipe":
			want = fs.ModeNamedPipe
		}
		if e.Type() != want {
			wrong++
		}
	}
	if wrong != 0 {
		t.Errorf("readdir typed %d of %d entries wrongly", wrong, len(es))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || string(b) != "content" {
		t.Errorf("read: %q %v", b, err)
	}
}
