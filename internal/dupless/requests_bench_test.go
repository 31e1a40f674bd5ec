package dupless

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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

// kindsBE counts a client's requests by kind, and the commits they cost on a storage
// service (every request that changes something: put, batch, delete, move, create).
type kindsBE struct {
	storage.Backend
	mu    sync.Mutex
	kinds map[string]int
}

func (b *kindsBE) count(k string) {
	b.mu.Lock()
	if b.kinds == nil {
		b.kinds = map[string]int{}
	}
	b.kinds[k]++
	b.mu.Unlock()
}

func (b *kindsBE) snapshot() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for k, v := range b.kinds {
		out[k] = v
	}
	return out
}

func (b *kindsBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	b.count("put")
	return b.Backend.Put(ctx, d, n, r, s)
}
func (b *kindsBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	b.count("get")
	return b.Backend.Get(ctx, d, n)
}
func (b *kindsBE) Stat(ctx context.Context, d, n string) (storage.Info, error) {
	b.count("stat")
	return b.Backend.Stat(ctx, d, n)
}
func (b *kindsBE) List(ctx context.Context, d string) ([]storage.Info, error) {
	b.count("list")
	return b.Backend.List(ctx, d)
}
func (b *kindsBE) Delete(ctx context.Context, d, n string) error {
	b.count("delete")
	return b.Backend.Delete(ctx, d, n)
}
func (b *kindsBE) Move(ctx context.Context, sd, sn, dd, dn string) error {
	b.count("move")
	return b.Backend.Move(ctx, sd, sn, dd, dn)
}
func (b *kindsBE) Create(ctx context.Context, d string) error {
	b.count("create")
	return b.Backend.Create(ctx, d)
}
func (b *kindsBE) Search(ctx context.Context, d, n string) ([]storage.Info, error) {
	b.count("search")
	return b.Backend.Search(ctx, d, n)
}

// kindsBatchBE is kindsBE with batch uploads (one request and one commit per batch).
type kindsBatchBE struct{ kindsBE }

func (b *kindsBatchBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	b.count("batch")
	return storage.PutAll(ctx, b.Backend, objs)
}

// kindsCondBE is kindsBatchBE with conditional batches (condBE, putcas_test.go).
type kindsCondBE struct {
	kindsBatchBE
	cond *condBE
}

func (b *kindsCondBE) BatchCreates() {}

func (b *kindsCondBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	b.count("batch")
	return b.cond.PutBatch(ctx, objs)
}

// kindsAbsentBE is kindsCondBE with absent conditions (batch version 3).
type kindsAbsentBE struct{ *kindsCondBE }

func (b kindsAbsentBE) BatchAbsents() {}

// BenchmarkPutOneFileByKind: the requests of one 'veil put' of a new 4 KiB file into a
// namespace that already holds files, by kind, and the commits they cost on the service;
// without batch uploads (S3, a local directory), with them, with conditional batches (the
// storage service before batch version 3) and with absent conditions too (the storage
// service: the put goes without the lock). Each put is a new Client over one remembered
// root, as veil's commands hold it in the profile. Deterministic: the metrics are the last
// iteration's.
func BenchmarkPutOneFileByKind(b *testing.B) {
	for _, kind := range []string{"one-put-per-object", "batched", "conditional", "absent"} {
		b.Run(kind, func(b *testing.B) {
			local := newBackendB(b)
			kb := &kindsCondBE{kindsBatchBE{kindsBE{Backend: local}}, &condBE{Backend: local}}
			var be storage.Backend = map[string]storage.Backend{"one-put-per-object": &kb.kindsBE,
				"batched": &kb.kindsBatchBE, "conditional": kb, "absent": kindsAbsentBE{kb}}[kind]
			master := NewMasterKey()
			src := b.TempDir()
			mem := RootFile(filepath.Join(b.TempDir(), "root.mem"), "") // the profile's, as veil's commands hold it
			var counts map[string]int
			for i := 0; i < b.N; i++ {
				p := filepath.Join(src, "f"+itoa(i))
				writeB(b, p, randBytes(4096, uint64(i)))
				c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Roots: mem})
				if err != nil {
					b.Fatal(err)
				}
				before := kb.snapshot()
				if _, err := c.Put(context.Background(), []string{p}, ""); err != nil {
					b.Fatal(err)
				}
				c.Close()
				counts = kb.snapshot()
				for k, v := range before {
					counts[k] -= v
				}
			}
			total, commits := 0, 0
			for k, v := range counts {
				total += v
				switch k {
				case "put", "batch", "delete", "move", "create":
					commits += v
				}
				b.ReportMetric(float64(v), k+"/put")
			}
			b.ReportMetric(float64(total), "requests/put")
			b.ReportMetric(float64(commits), "commits/put")
		})
	}
}
