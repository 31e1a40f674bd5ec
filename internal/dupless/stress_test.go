package dupless

// Stress and failure tests of the put pipeline:
// shared chunks across files, injected upload and key server failures, cancellation.
// Every record written must read back exactly, no goroutine may outlive Put, and a
// fallback (random key) chunk is never shared between files.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// slowBE delays (and optionally fails) chunk Puts.
type slowBE struct {
	storage.Backend
	delay    time.Duration
	failEach int // fail every n-th chunk put (0: never)
	n        atomic.Int64
	failed   sync.Map // chunk names whose put failed
	hook     func(dir, name string)
}

func (b *slowBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if strings.HasPrefix(dir, chunkRoot) {
		if b.hook != nil {
			b.hook(dir, name)
		}
		if b.delay > 0 {
			select {
			case <-time.After(time.Duration(mrand.Int64N(int64(b.delay)))):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if b.failEach > 0 && b.n.Add(1)%int64(b.failEach) == 0 {
			b.failed.Store(name, true)
			return errors.New("injected put failure")
		}
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// flakyKD delays and fails some calls.
type flakyKD struct {
	delay    time.Duration
	failEach int
	n        atomic.Int64
}

func (k *flakyKD) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	if k.delay > 0 {
		time.Sleep(time.Duration(mrand.Int64N(int64(k.delay))))
	}
	if k.failEach > 0 && k.n.Add(1)%int64(k.failEach) == 0 {
		return nil, errors.New("injected KS failure")
	}
	return mle.LocalKeys{}.DeriveKeys(ctx, ds)
}

// sharedTree: many files sharing chunks (small copies, and big files built of shared segments).
func sharedTree(t *testing.T, seed uint64) (string, map[string][]byte) {
	dir := filepath.Join(t.TempDir(), "src")
	files := map[string][]byte{}
	var smalls [][]byte
	for i := range 6 {
		smalls = append(smalls, randBytes(1000+int(seed)*7+i*50_000, seed*100+uint64(i)))
	}
	var segs [][]byte
	for i := range 5 {
		segs = append(segs, randBytes(3<<20, seed*1000+uint64(i)))
	}
	r := mrand.New(mrand.NewPCG(seed, 1))
	for i := range 40 {
		files[fmt.Sprintf("s%02d", i)] = smalls[r.IntN(len(smalls))]
	}
	for i := range 12 {
		var b []byte
		for range 1 + r.IntN(4) {
			b = append(b, segs[r.IntN(len(segs))]...)
		}
		files[fmt.Sprintf("b%02d", i)] = b
	}
	for n, b := range files {
		write(t, filepath.Join(dir, n), b)
	}
	return dir, files
}

// checkStored: every file whose record exists must be retrievable intact; fallback chunks
// must never appear in two records.
func checkStored(t *testing.T, c *Client, files map[string][]byte) (stored int) {
	t.Helper()
	randTags := map[mle.Tag]string{}
	for n, want := range files {
		encDir, encName, _ := c.encFile("src/" + n)
		rec, err := c.readRecord(ctx, encDir, encName+keySuffix)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Errorf("%s: record: %v", n, err)
			continue
		}
		stored++
		seen := map[mle.Tag]bool{}
		for _, ch := range rec.Chunks {
			if ch.Flags&flagRandomKey != 0 && !seen[ch.Tag] {
				seen[ch.Tag] = true
				if other, ok := randTags[ch.Tag]; ok {
					t.Errorf("fallback chunk shared by %s and %s", other, n)
				}
				randTags[ch.Tag] = n
			}
		}
		out := filepath.Join(t.TempDir(), n)
		s, err := c.Get(ctx, "src/"+n, out)
		if err != nil || s.Err() != nil {
			t.Errorf("%s: record written but get fails: %v %v", n, err, s.Err())
			continue
		}
		got, _ := os.ReadFile(out)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: content differs", n)
		}
	}
	return stored
}

func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d, before %d\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

func putWithTimeout(t *testing.T, c *Client, cctx context.Context, dir string) (*Summary, error) {
	type res struct {
		s   *Summary
		err error
	}
	ch := make(chan res, 1)
	go func() { s, err := c.Put(cctx, []string{dir}, ""); ch <- res{s, err} }()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(60 * time.Second):
		buf := make([]byte, 4<<20)
		t.Fatalf("Put hung\n%s", buf[:runtime.Stack(buf, true)])
	}
	return nil, nil
}

func TestStressSharedChunksAndFailures(t *testing.T) {
	fastRetries(t)
	for _, tc := range []struct {
		name           string
		beDelay        time.Duration
		beFail, kdFail int
		kdDelay        time.Duration
		retry0         bool
	}{
		{"plain", 3 * time.Millisecond, 0, 0, 0, false},
		{"befail", 3 * time.Millisecond, 7, 0, 0, false},
		{"kdfail-retry0", 2 * time.Millisecond, 0, 3, 2 * time.Millisecond, true},
		{"both", 2 * time.Millisecond, 5, 2, time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			be := &slowBE{Backend: newBackend(t), delay: tc.beDelay, failEach: tc.beFail}
			c, err := New(be, NewMasterKey(), Options{Keys: &flakyKD{delay: tc.kdDelay, failEach: tc.kdFail}, Jobs: 4})
			if err != nil {
				t.Fatal(err)
			}
			if tc.retry0 {
				c.ks.retryAfter = 0
			}
			dir, files := sharedTree(t, 3)
			sum, err := putWithTimeout(t, c, ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			n := checkStored(t, c, files)
			t.Logf("stored %d/%d, errs %d, chunks %d uploaded %d kept %d fallback %v", n, len(files), len(sum.Errors),
				sum.Chunks, sum.ChunksUploaded, sum.ChunksKept, sum.FallbackFiles())
			if n+len(sum.Errors) != len(files) || n != sum.Files {
				t.Errorf("accounting: stored %d, errors %d, files %d, sum.Files %d", n, len(sum.Errors), len(files), sum.Files)
			}
			c.Close()
			waitGoroutines(t, base)
		})
	}
}

func TestCancelAtRandomTimes(t *testing.T) {
	for i := range 6 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			base := runtime.NumGoroutine()
			be := &slowBE{Backend: newBackend(t), delay: 5 * time.Millisecond}
			c, err := New(be, NewMasterKey(), Options{Keys: &flakyKD{delay: 3 * time.Millisecond}, Jobs: 4})
			if err != nil {
				t.Fatal(err)
			}
			dir, files := sharedTree(t, uint64(10+i))
			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(time.Duration(20+i*40)*time.Millisecond, cancel)
			_, err = putWithTimeout(t, c, cctx, dir)
			if !errors.Is(err, context.Canceled) {
				t.Logf("put finished before cancel: %v", err)
			}
			n := checkStored(t, c, files)
			t.Logf("stored %d/%d", n, len(files))
			c.Close()
			waitGoroutines(t, base)
		})
	}
}

// Failed chunk uploads are retried, by the run and then by every file waiting for the
// chunk, so transient failures fail no file, and a chunk that can never be stored fails
// exactly the files that contain it, with the backend's error.
func TestFailedUploadDoesNotFailTheRun(t *testing.T) {
	fastRetries(t)
	for _, tc := range []struct {
		failures int64 // chunk puts that fail before the backend recovers
		failed   int   // files expected to fail
	}{
		{1, 0},
		{int64(len(uploadBackoff) + 1), 0}, // the run gives up; the waiting files do not
		{1 << 30, 5},
	} {
		t.Run(fmt.Sprint(tc.failures), func(t *testing.T) {
			failing := &failingBE{Backend: newBackend(t), left: tc.failures}
			c, err := New(failing, NewMasterKey(), Options{Keys: mle.LocalKeys{}, Jobs: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			dir := filepath.Join(t.TempDir(), "src")
			data := randBytes(100_000, 5)
			for i := range 5 {
				write(t, filepath.Join(dir, fmt.Sprintf("f%d", i)), data)
			}
			other := randBytes(60_000, 6) // a file with other content is unaffected
			write(t, filepath.Join(dir, "other"), other)
			sum, err := c.Put(ctx, []string{dir}, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("failed files: %d of 6 after %d failed chunk puts; Files=%d Chunks=%d ChunksKept=%d ChunksUploaded=%d",
				len(sum.Errors), tc.failures, sum.Files, sum.Chunks, sum.ChunksKept, sum.ChunksUploaded)
			if len(sum.Errors) != tc.failed || sum.Files != 6-tc.failed {
				t.Errorf("%d files failed, %d stored; want %d failed: %v", len(sum.Errors), sum.Files, tc.failed, sum.Err())
			}
			if tc.failed > 0 && !strings.Contains(sum.Err().Error(), "connection reset") {
				t.Errorf("error does not carry the backend's: %v", sum.Err())
			}
			if sum.ChunksKept > sum.Chunks {
				t.Errorf("ChunksKept %d > Chunks %d (kept counted for files that failed)", sum.ChunksKept, sum.Chunks)
			}
		})
	}
}

// failingBE fails the first puts of the first chunk over 80 kB it sees.
type failingBE struct {
	storage.Backend
	mu   sync.Mutex
	bad  string // the chunk that fails
	left int64
}

func (b *failingBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if strings.HasPrefix(dir, chunkRoot) {
		b.mu.Lock()
		if b.bad == "" && size > 80_000 { // not the other file's chunk
			b.bad = dir + "/" + name
		}
		fail := b.bad == dir+"/"+name && b.left > 0
		if fail {
			b.left--
		}
		b.mu.Unlock()
		if fail {
			return errors.New("transient: connection reset")
		}
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

type blockKD struct{ calls atomic.Int64 }

func (k *blockKD) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	if k.calls.Add(1) > 3 {
		<-ctx.Done() // hangs until the client closes
		return nil, ctx.Err()
	}
	return mle.LocalKeys{}.DeriveKeys(ctx, ds)
}

// Cancel in the middle of a run (after some chunk uploads), with a KS that hangs after a few calls.
func TestCancelMidRun(t *testing.T) {
	for i, after := range []int64{2, 8, 20, 40} {
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			base := runtime.NumGoroutine()
			cctx, cancel := context.WithCancel(ctx)
			var puts atomic.Int64
			be := &slowBE{Backend: newBackend(t), delay: 3 * time.Millisecond,
				hook: func(string, string) {
					if puts.Add(1) == after {
						cancel()
					}
				}}
			var kd mle.KeyDeriver = &flakyKD{delay: 2 * time.Millisecond}
			if i%2 == 1 {
				kd = &blockKD{}
			}
			c, err := New(be, NewMasterKey(), Options{Keys: kd, Jobs: 4})
			if err != nil {
				t.Fatal(err)
			}
			dir, files := sharedTree(t, uint64(20+i))
			if i%2 == 1 {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
			sum, err := putWithTimeout(t, c, cctx, dir)
			n := checkStored(t, c, files)
			t.Logf("err %v, stored %d/%d, sum.Files %d", err, n, len(files), sum.Files)
			if n != sum.Files {
				t.Errorf("records %d, Files %d", n, sum.Files)
			}
			c.Close()
			waitGoroutines(t, base)
		})
	}
}

// fastRetries shortens the pauses between upload retries for the duration of a test.
func fastRetries(t *testing.T) {
	saved := uploadBackoff
	uploadBackoff = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { uploadBackoff = saved })
}
