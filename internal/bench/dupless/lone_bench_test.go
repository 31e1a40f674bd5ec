package duplessbench

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkLonePut4KiB: one 'veil put' of a new 4 KiB file through a real all-in-one
// deployment on loopback (key server and storage service over TLS, in this process), as
// the fig6-7 4 KiB put row measures it, without the bench's other experiments: for a
// focused profile (-cpuprofile, -trace). It reports the median of each client phase.
func BenchmarkLonePut4KiB(b *testing.B) {
	ctx := context.Background()
	e, err := start(ctx, b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer e.stop()
	for i := 0; i < 20; i++ { // a namespace that already holds files
		e.putFresh(ctx, b, fmt.Sprintf("warm%d", i), 4<<10, "lone")
	}
	e.mu.Lock()
	e.phases = map[string][]time.Duration{}
	e.mu.Unlock()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.putFresh(ctx, b, fmt.Sprintf("f%d", i), 4<<10, "lone")
	}
	b.StopTimer()
	e.mu.Lock()
	defer e.mu.Unlock()
	for p, ds := range e.phases {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), p+"-us")
	}
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
func BenchmarkPut64MiB(b *testing.B) {
	ctx := context.Background()
	e, err := start(ctx, b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer e.stop()
	b.SetBytes(64 << 20)
	for i := 0; i < b.N; i++ {
		e.putFresh(ctx, b, fmt.Sprintf("big%d", i), 64<<20, "big")
	}
}
