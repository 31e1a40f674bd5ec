package fusemount

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// countingBE counts the chunk objects and the tree roots read from the real backend it
// wraps.
type countingBE struct {
	storage.Backend
	chunkGets, rootGets atomic.Int64
	gets                atomic.Int64 // every object read
}

func (b *countingBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	b.gets.Add(1)
	if strings.HasPrefix(dir, ".veil/chunks/") {
		b.chunkGets.Add(1)
	}
	if dir == ".veil/roots" {
		b.rootGets.Add(1)
	}
	return b.Backend.Get(ctx, dir, name)
}

// A file read through the mount fetches each chunk once, although the kernel sends its
// reads in pieces, several at a time and out of order; and readers at random offsets
// (across chunk boundaries, past the end) get the file's bytes. Found by review: a chunk
// that two of the kernel's reads needed at once was fetched by each, 30 to 80% more than
// the file.
func TestMountReadsEachChunkOnce(t *testing.T) {
	store := t.TempDir()
	l, err := local.New(store)
	if err != nil {
		t.Fatal(err)
	}
	be := &countingBE{Backend: l}
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	data := make([]byte, 32<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	os.WriteFile(filepath.Join(src, "big"), data, 0o644)
	m := startMount(t, be, src)
	chunks, _ := filepath.Glob(filepath.Join(store, ".veil", "chunks", "??", "*"))
	be.chunkGets.Store(0)
	p := filepath.Join(m.dir, "current", "src", "big")
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("read through the mount: %d bytes, %v; want the file", len(b), err)
	}
	if got := be.chunkGets.Load(); got != int64(len(chunks)) {
		t.Errorf("reading the file fetched %d chunks; it has %d", got, len(chunks))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Open(p)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			rr := rand.New(rand.NewPCG(uint64(g), 9))
			for range 100 {
				off, buf := rr.Int64N(int64(len(data))+1000), make([]byte, rr.IntN(300000))
				n, err := f.ReadAt(buf, off)
				want := data[min(off, int64(len(data))):min(off+int64(len(buf)), int64(len(data)))]
				if n != len(want) || !bytes.Equal(buf[:n], want) || err != nil && err != io.EOF {
					t.Errorf("read %d bytes at %d: %d bytes, %v; want %d", len(buf), off, n, err, len(want))
					return
				}
			}
		}()
	}
	wg.Wait()
}
