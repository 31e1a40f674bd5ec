package dupless

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// recordReads counts the requests that read or list the user's tree (not .veil/: the key
// check, locks and roots), and the record objects written there.
type recordReads struct {
	storage.Backend
	reads, writes atomic.Int64
}

func userPath(dir string) bool { return dir != ".veil" && !strings.HasPrefix(dir, ".veil/") }

func (b *recordReads) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	if userPath(d) {
		b.reads.Add(1)
	}
	return b.Backend.Get(ctx, d, n)
}
func (b *recordReads) List(ctx context.Context, d string) ([]storage.Info, error) {
	if userPath(d) {
		b.reads.Add(1)
	}
	return b.Backend.List(ctx, d)
}
func (b *recordReads) Stat(ctx context.Context, d, n string) (storage.Info, error) {
	if userPath(d) {
		b.reads.Add(1)
	}
	return b.Backend.Stat(ctx, d, n)
}
func (b *recordReads) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	if userPath(d) {
		b.writes.Add(1)
	}
	return b.Backend.Put(ctx, d, n, r, s)
}

// device is one profile: its own root memory and put cache, on a shared location.
type device struct {
	mem   RootMemory
	cache *PutCache
	logs  *logBuf
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

func newDevice(t *testing.T, location string) *device {
	dir := t.TempDir()
	return &device{mem: RootFile(filepath.Join(dir, "root.mem"), ""),
		cache: &PutCache{Path: filepath.Join(dir, "cache", "put"), Location: location}, logs: &logBuf{}}
}

// put runs one command of the device (a new Client each time, as the CLI does).
func (d *device) put(t *testing.T, be storage.Backend, master []byte, src, dest string) *Summary {
	t.Helper()
	c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3, Roots: d.mem, Cache: d.cache,
		Logger: slog.New(slog.NewTextHandler(d.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sum, err := c.Put(ctx, []string{src}, dest)
	if err != nil {
		t.Fatalf("put: %v (%v)", err, sum.Errors)
	}
	return sum
}

// cacheTree is a tree of small files in nested directories, with a symlink.
func cacheTree(t *testing.T) (string, int) {
	src := filepath.Join(t.TempDir(), "src")
	n := 0
	for d := 0; d < 4; d++ {
		for f := 0; f < 6; f++ {
			write(t, filepath.Join(src, "d"+itoa(d), "sub", "f"+itoa(f)), randBytes(100+f, uint64(d*10+f)))
			n++
		}
	}
	os.Symlink("d0/sub/f0", filepath.Join(src, "link"))
	return src, n
}

func TestPutCacheSkipsRecordReads(t *testing.T) {
	putLongAfter(t)
	be := &recordReads{Backend: newBackend(t)}
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	dev.put(t, be, master, src, "")
	be.reads.Store(0)
	sum := dev.put(t, be, master, src, "")
	if got := be.reads.Load(); got != 0 || sum.Unchanged != n || sum.Files != n {
		t.Fatalf("second put: %d reads of the tree, %d of %d files unchanged; want 0 reads, all unchanged", got, sum.Unchanged, sum.Files)
	}
	// Without the cache the same put reads every record (what the cache saves).
	nocache := &device{mem: dev.mem, logs: &logBuf{}}
	be.reads.Store(0)
	nocache.put(t, be, master, src, "")
	if got := be.reads.Load(); got < int64(n) {
		t.Fatalf("put without the cache: %d reads, want at least %d", got, n)
	}
}

// A cache that fails its check is never used: put reads the records (and still finds the
// files unchanged), and writes a good cache that the next put uses.
func TestPutCacheCorruptIsRebuilt(t *testing.T) {
	cases := map[string]func(t *testing.T, d *device) *device{
		"bit flipped": func(t *testing.T, d *device) *device {
			b, _ := os.ReadFile(d.cache.Path)
			b[len(b)/2] ^= 1
			os.WriteFile(d.cache.Path, b, 0o600)
			return d
		},
		"unknown version": func(t *testing.T, d *device) *device {
			b, _ := os.ReadFile(d.cache.Path)
			b[0] = cacheVersion + 1
			os.WriteFile(d.cache.Path, b, 0o600)
			return d
		},
		"truncated": func(t *testing.T, d *device) *device {
			b, _ := os.ReadFile(d.cache.Path)
			os.WriteFile(d.cache.Path, b[:len(b)-1], 0o600)
			return d
		},
		"another location's": func(t *testing.T, d *device) *device {
			moved := *d
			moved.cache = &PutCache{Path: d.cache.Path, Location: "/srv/elsewhere"}
			return &moved
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			putLongAfter(t)
			be := &recordReads{Backend: newBackend(t)}
			master, dev := NewMasterKey(), newDevice(t, "/srv/a")
			src, n := cacheTree(t)
			dev.put(t, be, master, src, "")
			dev = spoil(t, dev)
			be.reads.Store(0)
			sum := dev.put(t, be, master, src, "")
			if got := be.reads.Load(); got < int64(n) || sum.Unchanged != n {
				t.Fatalf("put with a spoilt cache: %d reads, %d unchanged; want the records read (>= %d) and all unchanged", got, sum.Unchanged, n)
			}
			if logs := dev.logs.take(); !strings.Contains(logs, "put cache unusable") {
				t.Fatalf("no warning about the cache: %q", logs)
			}
			be.reads.Store(0)
			if sum := dev.put(t, be, master, src, ""); be.reads.Load() != 0 || sum.Unchanged != n {
				t.Fatalf("put after the rebuild: %d reads, %d unchanged; want 0 and %d", be.reads.Load(), sum.Unchanged, n)
			}
		})
	}
}

// Another device replaces a file: the root no longer lists the record this device's cache
// remembers, so put reads that record (only that one), sees it differs from the local
// file, and stores the local file again. A cache trusted without the root would skip it.
func TestPutCacheStaleAfterAnotherDevice(t *testing.T) {
	putLongAfter(t)
	be := &recordReads{Backend: newBackend(t)}
	master := NewMasterKey()
	a, b := newDevice(t, "/srv/a"), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	a.put(t, be, master, src, "")
	other := filepath.Join(t.TempDir(), "sub")
	write(t, filepath.Join(other, "f3"), []byte("the other device's version"))
	b.put(t, be, master, filepath.Join(other, "f3"), "src/d2/sub")
	be.reads.Store(0)
	sum := a.put(t, be, master, src, "")
	if sum.Unchanged != n-1 || sum.Files != n {
		t.Fatalf("put after another device's change: %d of %d unchanged, want %d", sum.Unchanged, sum.Files, n-1)
	}
	if got := be.reads.Load(); got == 0 || got > 3 {
		t.Fatalf("put after another device's change: %d reads, want the changed record's few", got)
	}
	c := clientWith(t, be, master, a.mem)
	out := t.TempDir()
	if _, err := c.Get(ctx, "src/d2/sub/f3", out); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(src, "d2", "sub", "f3"))
	if got, _ := os.ReadFile(filepath.Join(out, "f3")); !bytes.Equal(got, want) {
		t.Fatalf("stored f3 is %q, want this device's file", got)
	}
}

// Content changed with the same size and mtime put back (the blind spot of comparing size
// and mtime): the cache knows the file's ctime, so put reads it and stores the new content.
// A touch that changes nothing but the ctime reads the file and writes no record.
func TestPutCacheSeesSameSizeSameMtime(t *testing.T) {
	be := &recordReads{Backend: newBackend(t)}
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	dev.put(t, be, master, src, "")
	f := filepath.Join(src, "d1", "sub", "f2")
	fi, _ := os.Stat(f)
	write(t, f, bytes.Repeat([]byte{'z'}, int(fi.Size())))
	os.Chtimes(f, time.Now(), fi.ModTime())
	sum := dev.put(t, be, master, src, "")
	if sum.Unchanged != n-1 {
		t.Fatalf("%d unchanged, want %d (the rewritten file stored)", sum.Unchanged, n-1)
	}
	c := clientWith(t, be, master, dev.mem)
	out := t.TempDir()
	if _, err := c.Get(ctx, "src/d1/sub/f2", out); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "f2")); !bytes.Equal(got, bytes.Repeat([]byte{'z'}, int(fi.Size()))) {
		t.Fatalf("stored content is the old one")
	}
	// chmod there and back: the ctime moves, the content and metadata do not.
	g := filepath.Join(src, "d3", "sub", "f1")
	os.Chmod(g, 0o600)
	os.Chmod(g, 0o644)
	be.writes.Store(0)
	if sum := dev.put(t, be, master, src, ""); sum.Unchanged != n || be.writes.Load() != 0 {
		t.Fatalf("after a touch: %d unchanged, %d objects written; want %d and 0", sum.Unchanged, be.writes.Load(), n)
	}
}

const cacheVectorFile = "../../testdata/dupless/put-cache.json"

type cacheVector struct {
	Comment  string `json:"comment,omitempty"`
	Location string `json:"location"`
	Plain    string `json:"plain,omitempty"` // hex of the plaintext (before compression)
	Sealed   string `json:"sealed"`          // hex
	Result   string `json:"result"`          // "ok" or "reject"
}

// The master key of the vectors is 32 bytes of 0x42, as in records-v2.json.
func genCacheVectors() []cacheVector {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	nonce := bytes.Repeat([]byte{0x0b}, recordHeader-1)
	f := &cacheFile{RootSeq: 9, Entries: map[string]cacheEntry{
		"ENCDIR/.dir":        {Hash: [32]byte{1}, Type: typeDir, Mode: 0o755, MTime: 2},
		"ENCDIR/ENCNAME.key": {Hash: [32]byte{2}, Type: typeFile, Mode: 0o644, MTime: 981173106000007000, Size: 7, Chunks: 1, CTime: 981173107000000000, Ino: 1234, Dev: 2049},
		"LINK.key":           {Hash: [32]byte{3}, Type: typeSymlink, Mode: 0o777, MTime: 1, Target: "../target", Flags: cacheRandomKey},
	}}
	f.RootSum[0] = 0xcc
	const loc = "veil://store.example:8443"
	good := k.sealCache(f, loc, nonce)
	out := []cacheVector{{Location: loc, Plain: hex.EncodeToString(f.marshal()), Sealed: hex.EncodeToString(good), Result: "ok"}}
	bad := func(comment, loc string, b []byte) {
		out = append(out, cacheVector{Comment: comment, Location: loc, Sealed: hex.EncodeToString(b), Result: "reject"})
	}
	bad("another storage location", "veil://other.example:8443", good)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-20] ^= 1
	bad("one bit flipped", loc, flipped)
	bad("unknown version", loc, append([]byte{2}, good[1:]...))
	bad("truncated", loc, good[:len(good)-1])
	return out
}

func TestPutCacheVectors(t *testing.T) {
	var v []cacheVector
	testutil.Vectors(t, cacheVectorFile, &v, func() any { return genCacheVectors() })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	for i, cv := range v {
		f, err := k.openCache(testutil.Unhex(t, cv.Sealed), cv.Location)
		if cv.Result == "reject" {
			if err == nil {
				t.Errorf("cache %d (%s): accepted", i, cv.Comment)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cache %d: %v", i, err)
		}
		// The plaintext is pinned byte for byte; the zstd frame around it may differ
		// between compressor versions (as for tree roots).
		if !bytes.Equal(f.marshal(), testutil.Unhex(t, cv.Plain)) {
			t.Errorf("cache %d: parsed differently from the vector", i)
		}
	}
}

// FuzzOpenPutCache: arbitrary bytes as a sealed cache and as its plaintext: errors, never
// panics, and what parses re-encodes exactly.
func FuzzOpenPutCache(f *testing.F) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{1}, MasterKeySize))
	cf := &cacheFile{RootSeq: 3, Entries: map[string]cacheEntry{"a.key": {Type: typeFile, Size: 3}, "b/.dir": {Type: typeDir}}}
	f.Add(k.sealCache(cf, "loc", make([]byte, recordHeader-1)), cf.marshal())
	f.Add([]byte{1}, (&cacheFile{}).marshal())
	f.Fuzz(func(t *testing.T, sealed, plain []byte) {
		k.openCache(sealed, "loc")
		c, err := unmarshalCache(plain)
		if err == nil && !bytes.Equal(c.marshal(), plain) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// A lone put without the lock leaves the put cache as it was (rewriting every entry for
// its one was half of its CPU), and the cache stays sound: the next put of the tree still
// skips every file without a read, and the lone file, put again unchanged, is found
// unchanged from its record.
func TestLocklessPutLeavesCache(t *testing.T) {
	putLongAfter(t)
	rr := &recordReads{Backend: newBackend(t)}
	be := &gateBE{absentBE: absentBE{&condBE{Backend: rr}}}
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	dev.put(t, be, master, src, "")
	before, err := os.ReadFile(dev.cache.Path)
	if err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(t.TempDir(), "lone")
	write(t, lone, randBytes(4096, 99))
	dev.put(t, be, master, lone, "")
	if be.absents.Load() != 1 {
		t.Fatalf("%d lock-free batches, want the lone put's one", be.absents.Load())
	}
	if after, err := os.ReadFile(dev.cache.Path); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the lone lock-free put rewrote the put cache (%v)", err)
	}
	rr.reads.Store(0)
	if sum := dev.put(t, be, master, src, ""); rr.reads.Load() != 0 || sum.Unchanged != n {
		t.Fatalf("tree put after the lone put: %d reads, %d of %d unchanged; want 0 reads, all unchanged", rr.reads.Load(), sum.Unchanged, n)
	}
	rr.writes.Store(0)
	if sum := dev.put(t, be, master, lone, ""); sum.Unchanged != 1 || rr.writes.Load() != 0 {
		t.Fatalf("lone file put again: %d unchanged, %d writes; want it unchanged, nothing written", sum.Unchanged, rr.writes.Load())
	}
}
