package local_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// A full disk is storage.ErrCannotStore (the class the DupLESS client stops a run on, as
// it does for the storage service's 507 no_space), keeps the cause (ENOSPC), and leaves
// neither a temporary file nor a partial object behind.
func TestFullDiskIsCannotStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("needs a small file system (mount -t tmpfs, root): %s", strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{1}, 300<<10)
	var full error
	var failed string
	for i := range 10 {
		name := "f" + string(rune('a'+i))
		if err := b.Put(t.Context(), "d", name, bytes.NewReader(data), int64(len(data))); err != nil {
			full, failed = err, name
			break
		}
	}
	if full == nil {
		t.Fatal("3 MiB into a 1 MiB file system: no error")
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("full disk: %v, want the cause ENOSPC", full)
	}
	if !errors.Is(full, storage.ErrCannotStore) {
		t.Fatalf("full disk: %v, want storage.ErrCannotStore", full)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, local.TempDirName))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "put-") { // the commit lock's file stays
			t.Fatalf("temporary files left: %v", ents)
		}
	}
	if _, err := b.Stat(t.Context(), "d", failed); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("failed put left %s: %v", failed, err)
	}
}
