package fusemount

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Reading many files through the mount, one after the other, keeps chunks cached for open
// files only. Found by review: each file's last chunk stayed cached on its
// node after close, for as long as the kernel kept the inode (an hour's entry timeout), so
// 'cp -r' of a mounted tree grew the mount by the size of the tree.
func TestMountReleasesChunksOnClose(t *testing.T) {
	const files, size = 96, 1 << 20
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, size)
	for i := range files {
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		if err := os.WriteFile(filepath.Join(src, fmt.Sprint(i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mnt := mount(t, src)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range files {
		if b, err := os.ReadFile(filepath.Join(mnt, "current", "src", fmt.Sprint(i))); err != nil || len(b) != size {
			t.Fatalf("read %d: %d bytes, %v", i, len(b), err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > files*size/4 {
		t.Errorf("after reading %d files of %d KiB (all closed) the mount holds %d MiB more", files, size>>10, grew>>20)
	}
}
