package duplessbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkLonePut4KiB: one 'veil put' of a new 4 KiB file through a real all-in-one
// deployment on loopback (key server and storage service over TLS, in this process), as
// the fig6-7 4 KiB put row measures it, without the bench's other experiments: for a
// focused profile (-cpuprofile, -trace). It reports the median of each client phase.
func BenchmarkLonePut4KiB(b *testing.B) {
	ctx, e := startB(b)
	for i := 0; i < 20; i++ { // a namespace that already holds files
		e.putFresh(ctx, b, fmt.Sprintf("warm%d", i), 4<<10, "lone")
	}
	e.lonePuts(ctx, b, "lone")
}

// lonePuts times b.N puts of a new 4 KiB file into dest, and reports the median of each
// client phase.
func (e *env) lonePuts(ctx context.Context, b *testing.B, dest string) {
	e.resetPhases()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.putFresh(ctx, b, fmt.Sprintf("new%d", i), 4<<10, dest)
	}
	b.StopTimer()
	e.reportPhases(b)
}

// reportPhases reports the median of each client phase since the phases were last reset.
func (e *env) reportPhases(b *testing.B) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for p, ds := range e.phases {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), p+"-us")
	}
}

// resetPhases forgets the phases timed so far.
func (e *env) resetPhases() {
	e.mu.Lock()
	e.phases = map[string][]time.Duration{}
	e.mu.Unlock()
}

// putFresh puts a new file of size bytes into dest, timing the put but not the file's
// making.
func (e *env) putFresh(ctx context.Context, b *testing.B, name string, size int64, dest string) {
	b.StopTimer()
	p, err := e.freshFile(name, size)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	s, err := e.client.Put(ctx, []string{p}, dest)
	if err == nil {
		err = s.Err()
	}
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPut64MiB: one 'veil put' of a new 64 MiB file through the same deployment (the
// fig6-7 64 MiB row), for a focused profile of a large put: go test
// ./internal/bench/dupless -run '^$' -bench Put64MiB -benchtime 10x -cpuprofile cpu.prof
// (large_bench_test.go: the plain and split puts it compares with).
func BenchmarkPut64MiB(b *testing.B) {
	ctx, e := startB(b)
	b.SetBytes(64 << 20)
	for i := 0; i < b.N; i++ {
		e.putFresh(ctx, b, fmt.Sprintf("big%d", i), 64<<20, "big")
	}
}

// BenchmarkLonePutBigNamespace: the lone 4 KiB put of BenchmarkLonePut4KiB into a
// namespace that already holds 5,000 files (50 folders of 100, put as one tree first), as a
// user's second device or a script adding one file to a backup sees it: what grows with the
// namespace (the root, the put cache, the destination folder) shows here.
func BenchmarkLonePutBigNamespace(b *testing.B) {
	ctx, e := startB(b)
	tree := filepath.Join(e.scratch, "tree")
	for d := 0; d < 50; d++ {
		dir := filepath.Join(tree, fmt.Sprintf("d%02d", d))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", f)), []byte(fmt.Sprintf("file %d/%d\n", d, f)), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	if s, err := e.client.Put(ctx, []string{tree}, ""); err != nil || s.Err() != nil {
		b.Fatal(err, s.Err())
	}
	e.lonePuts(ctx, b, "tree/d07")
}

// startB starts the deployment of a benchmark, stopped when it ends.
func startB(b *testing.B) (context.Context, *env) {
	ctx := context.Background()
	e, err := start(ctx, b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.stop)
	return ctx, e
}
