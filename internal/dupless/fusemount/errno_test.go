package fusemount

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/storage/local"
)

// A file whose content the storage service lost (its chunks deleted) reads as EIO, as any
// failed read does: the name exists. Found by review: the service's "not found" for the
// chunk became ENOENT, so 'cp' reported "No such file or directory" for a file 'ls' listed.
func TestMountLostChunkIsEIO(t *testing.T) {
	store := t.TempDir()
	be, err := local.New(store)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "file"), []byte("content that the service loses"), 0o644)
	mnt := mountOn(t, be, src)
	chunks, _ := filepath.Glob(filepath.Join(store, ".veil", "chunks", "??", "*"))
	removed := 0
	for _, c := range chunks {
		if os.Remove(c) == nil {
			removed++
		}
	}
	if removed == 0 {
		t.Fatalf("no chunk object found under %s", store)
	}
	_, err = os.ReadFile(filepath.Join(mnt, "current", "src", "file"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of a file whose chunk is gone: %v, want EIO", err)
	}
}
