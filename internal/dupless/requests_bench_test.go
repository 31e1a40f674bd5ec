package dupless

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// countingBE counts the requests a client makes: the cost of a command in round trips,
// which machine noise does not change.
type countingBE struct {
	storage.Backend
	n atomic.Int64
}

func (b *countingBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	b.n.Add(1)
	return b.Backend.Put(ctx, d, n, r, s)
}
func (b *countingBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	b.n.Add(1)
	return b.Backend.Get(ctx, d, n)
}
func (b *countingBE) Stat(ctx context.Context, d, n string) (storage.Info, error) {
	b.n.Add(1)
	return b.Backend.Stat(ctx, d, n)
}
func (b *countingBE) List(ctx context.Context, d string) ([]storage.Info, error) {
	b.n.Add(1)
	return b.Backend.List(ctx, d)
}
func (b *countingBE) Delete(ctx context.Context, d, n string) error {
	b.n.Add(1)
	return b.Backend.Delete(ctx, d, n)
}
func (b *countingBE) Move(ctx context.Context, sd, sn, dd, dn string) error {
	b.n.Add(1)
	return b.Backend.Move(ctx, sd, sn, dd, dn)
}

// BenchmarkPutOneSmallFileRequests: storage requests of one 'veil put' of a new 1 KiB file
// into a namespace that already holds files (a command per file, as a user's script runs it).
func BenchmarkPutOneSmallFileRequests(b *testing.B) {
	be := &countingBE{Backend: newBackendB(b)}
	master := NewMasterKey()
	src := b.TempDir()
	for i := 0; i < b.N; i++ {
		p := filepath.Join(src, "f"+itoa(i))
		writeB(b, p, randBytes(1024, uint64(i)))
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
		if err != nil {
			b.Fatal(err)
		}
		before := be.n.Load()
		if _, err := c.Put(context.Background(), []string{p}, ""); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(be.n.Load()-before), "requests/put")
		c.Close()
	}
}

func newBackendB(b *testing.B) storage.Backend {
	be, err := local.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return be
}

func writeB(b *testing.B, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
