package duplessbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/dupless"
)

// The 64 MiB put's floor. fig6-7 compares 'veil put' of a new 64 MiB file with one plain
// PUT of the same bytes. Between the two lie (1) what storing content as deduplicable
// chunks costs the storage layer by itself, with no client work at all: ~64 objects of
// ~NormChunk each, each its own request, temporary file, fsync and commit, against one;
// and (2) the client's chunking, hashing, key requests and encryption. These benchmarks
// measure the first apart, through the same deployment, sending from memory (the veil put
// reads a file, freshly written, as fig6-7's does):
//
//	go test ./internal/bench/dupless -run '^$' -bench '64MiB' -benchtime 20x
//
// BenchmarkPlainPut64MiB / BenchmarkSplitPut64MiB / BenchmarkPut64MiB in one run give the
// ratio plain : split : veil (docs/benchmarks.md, "The 64 MiB put's floor").

// BenchmarkPlainPut64MiB: one plain PUT of 64 MiB of fresh random bytes, from memory.
func BenchmarkPlainPut64MiB(b *testing.B) {
	ctx, e := startB(b)
	b.SetBytes(64 << 20)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		obj := make([]byte, 64<<20)
		rand.Read(obj)
		b.StartTimer()
		if err := e.raw.Put(ctx, "plain", fmt.Sprintf("p%d", i), bytes.NewReader(obj), int64(len(obj))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitPut64MiB: 64 MiB of fresh random bytes, from memory, as 64 plain PUTs of dupless.NormChunk bytes
// (veil's average chunk), up to 32 at once (a put's upload slots): the storage layer's
// cost of chunked content, without encryption, hashing or key requests.
func BenchmarkSplitPut64MiB(b *testing.B) {
	ctx, e := startB(b)
	b.SetBytes(64 << 20)
	const n = (64 << 20) / dupless.NormChunk
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		objs := make([][]byte, n)
		for j := range objs {
			objs[j] = make([]byte, dupless.NormChunk)
			rand.Read(objs[j])
		}
		b.StartTimer()
		if err := putAll(ctx, e, fmt.Sprintf("s%d", i), objs, 32); err != nil {
			b.Fatal(err)
		}
	}
}

// putAll stores objs as plain objects split/<prefix>-<j>, up to par at once.
func putAll(ctx context.Context, e *env, prefix string, objs [][]byte, par int) error {
	sem := make(chan struct{}, par)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for j, o := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- e.raw.Put(ctx, "split", fmt.Sprintf("%s-%d", prefix, j), bytes.NewReader(o), int64(len(o)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
