package fusefs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/oblivisync"
)

// A mountpoint inside the synced backend folder would have the sync client upload the
// plaintext view: Run refuses it before mounting (read-write and read-only alike).
func TestMountpointInsideBackendRefused(t *testing.T) {
	be := newBackend(t, 8, 8<<10, 2)
	mnt := filepath.Join(be, "view")
	os.Mkdir(mnt, 0o755)
	for _, ro := range []bool{false, true} {
		err := Run(context.Background(), Config{Backend: be, Mountpoint: mnt, Passphrase: []byte(testPass), ReadOnly: ro,
			Writer: oblivisync.Options{StateDir: t.TempDir()}})
		if !errors.Is(err, oblivisync.ErrInvalid) {
			t.Fatalf("read-only=%v: got %v, want ErrInvalid", ro, err)
		}
	}
}

// Growing a file past the backend's capacity is EFBIG through the mount, and the mount
// keeps working (it used to allocate a reference per fragment of the new size).
func TestTruncateHugeIsEFBIG(t *testing.T) {
	be := newBackend(t, 8, 8<<10, 2)
	mnt := mkdir(t, "rw")
	startMount(t, be, mnt, mkdir(t, "state"), false)
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<60); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("truncate to 2^60: got %v, want EFBIG", err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "hello" {
		t.Fatalf("after the refused truncate: %q %v", got, err)
	}
}

// Through the mount: write, unlink, keep writing and reading through the descriptor.
func TestUnlinkWhileOpenThroughMount(t *testing.T) {
	be := newBackend(t, 8, 8<<10, 2)
	mnt := mkdir(t, "rw")
	startMount(t, be, mnt, mkdir(t, "state"), false)
	p := filepath.Join(mnt, "tmp")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("hello")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" world"); err != nil {
		t.Fatalf("write after unlink: %v", err)
	}
	buf := make([]byte, 32)
	n, err := f.ReadAt(buf, 0)
	if string(buf[:n]) != "hello world" {
		t.Fatalf("read after unlink: %q %v", buf[:n], err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("name still there: %v", err)
	}
}
