package dupless

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// rootGets counts the reads of tree roots that exist (not the probe for the next number).
type rootGets struct {
	storage.Backend
	n atomic.Int64
}

func (b *rootGets) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	rc, err := b.Backend.Get(ctx, dir, name)
	if dir == rootsDir && err == nil {
		b.n.Add(1)
	}
	return rc, err
}

// snapDevice puts n versions of a small tree from dev (n snapshots) and returns a function
// opening a client of dev, as each CLI command does.
func snapDevice(t *testing.T, be storage.Backend, dev *device, n int) func() *Client {
	t.Helper()
	master := NewMasterKey()
	src := filepath.Join(t.TempDir(), "src")
	for i := 0; i < n; i++ {
		write(t, filepath.Join(src, "f"), randBytes(100+i, uint64(i)))
		write(t, filepath.Join(src, "sub", strings.Repeat("g", i+1)), []byte("x"))
		dev.put(t, be, master, src, "")
	}
	return func() *Client {
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Roots: dev.mem, Cache: dev.cache,
			Logger: slog.New(slog.NewTextHandler(dev.logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// A listing of the snapshots reads each root once on a device: the next listing, and a
// mount's snapshots/, describe them from the snapshot cache and read only the newest root
// (which every command reads); pinning by time and diff read only the roots they use.
// Before, each read every root whole.
func TestSnapshotsListedFromCache(t *testing.T) {
	be := &rootGets{Backend: newBackend(t)}
	dev := newDevice(t, "/srv/snaps")
	open := snapDevice(t, be, dev, 5)

	be.n.Store(0)
	first, err := open().Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 5 || be.n.Load() < 5 {
		t.Fatalf("first listing: %d snapshots, %d root reads; want 5 and every root read", len(first), be.n.Load())
	}
	be.n.Store(0)
	again, err := open().Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := be.n.Load(); got != 1 {
		t.Fatalf("second listing read %d roots, want 1 (the newest, read by every command)", got)
	}
	if !sameSnaps(first, again) {
		t.Fatalf("listing from the cache differs:\n%v\n%v", first, again)
	}
	be.n.Store(0)
	got, err := open().PinTime(ctx, first[1].Time) // get --at: picks from the descriptions
	if err != nil || got.Seq != first[1].Seq {
		t.Fatalf("pin to the second snapshot's time: %v %v", got, err)
	}
	if n := be.n.Load(); n != 2 {
		t.Fatalf("pinning by time read %d roots, want 2 (the newest and the one pinned)", n)
	}
	be.n.Store(0)
	if _, err := open().Diff(ctx, "1", "3", ""); err != nil {
		t.Fatal(err)
	}
	if n := be.n.Load(); n != 3 {
		t.Fatalf("diff 1 3 read %d roots, want 3 (the newest, 1 and 3)", n)
	}
	be.n.Store(0)
	k, err := open().OpenCatalog(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	fromCat, err := k.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := be.n.Load(); got != 1 || !sameSnaps(first, fromCat) {
		t.Fatalf("a mount's listing read %d roots (want 1) and gave %v", got, fromCat)
	}
}

// A snapshot cache that fails its check (corrupt, another location's) is not used: the
// listing reads every root, logs why, and writes the cache anew.
func TestSnapshotCacheCorruptRebuilt(t *testing.T) {
	be := &rootGets{Backend: newBackend(t)}
	dev := newDevice(t, "/srv/snaps")
	open := snapDevice(t, be, dev, 3)
	want, err := open().Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := snapCachePath(dev.cache)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("no snapshot cache written: %v", err)
	}
	b[len(b)-5] ^= 1
	os.WriteFile(p, b, 0o600)
	dev.logs.take()
	be.n.Store(0)
	got, err := open().Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if be.n.Load() != 3 || !sameSnaps(want, got) {
		t.Fatalf("with a corrupt cache: %d root reads (want 3), %v", be.n.Load(), got)
	}
	if logs := dev.logs.take(); !strings.Contains(logs, "snapshot cache not used") {
		t.Fatalf("no warning about the corrupt cache: %q", logs)
	}
	be.n.Store(0)
	if _, err := open().Snapshots(ctx); err != nil || be.n.Load() != 1 {
		t.Fatalf("after the rebuild: %d root reads, %v", be.n.Load(), err)
	}
}

// The cache describes a root only while an object of its number and size is listed: a
// root replaced by other bytes is read again (and here fails authentication) rather than
// described from the cache, and roots a forget dropped leave the listing and the cache.
func TestSnapshotCacheFollowsTheRoots(t *testing.T) {
	lb := newBackend(t)
	be := &rootGets{Backend: lb}
	dev := newDevice(t, "/srv/snaps")
	open := snapDevice(t, be, dev, 4)
	snaps, err := open().Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := open()
	if _, err := c.Forget(ctx, Policy{Last: 2}, false); err != nil {
		t.Fatal(err)
	}
	kept, err := open().Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSnaps(snaps[2:], kept) {
		t.Fatalf("after forget --last 2: %v, want %v", kept, snaps[2:])
	}
	cached := open().readSnapCache()
	if len(cached) != 2 {
		t.Fatalf("the cache still describes %d roots after forget, want 2", len(cached))
	}
	// Replace the older kept root's object by different bytes of another size.
	var obj string
	filepath.Walk(lb.Root(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Name() == rootName(kept[0].Seq) {
			obj = p
		}
		return nil
	})
	if obj == "" {
		t.Fatal("root object not found")
	}
	old, _ := os.ReadFile(obj)
	os.WriteFile(obj, append(old, 0), 0o600)
	// Not described from the cache: read, and listed as damaged (an older root; forget
	// --drop-damaged drops it).
	got, err := open().Snapshots(ctx)
	if err != nil || len(got) != 2 || got[0].Seq != kept[0].Seq || got[0].Damaged == "" || got[1].Damaged != "" {
		t.Fatalf("a root replaced by other bytes: %v, %+v; want it listed as damaged", err, got)
	}
}

func sameSnaps(a, b []Snapshot) bool {
	return slices.EqualFunc(a, b, func(x, y Snapshot) bool {
		return x.Seq == y.Seq && x.Time.Equal(y.Time) && x.Files == y.Files && x.Records == y.Records && x.SHA256 == y.SHA256
	})
}

const snapCacheVectorFile = "../../testdata/dupless/snapshot-cache.json"

// snapCacheV1 is a snapshot cache of version 1 (session 14 before review: entries without
// the root's listed time), sealed as genSnapCacheVectors seals.
const snapCacheV1 = "010c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c2bfffd02f98ae183e791bee03a4af1677bbf09d0363d0029ecd0a9d8c808883804b6638e320f808998da471f32f1f538bb1fa4333013be736ca5d6cc91ee33ff813df5c96a32a3b4b7bbb7673034a38f53aae919e0492f74bf1fc92d12326ebf1500877980da9cd2d2594a0a31b4a1efbd72f5acd843bd6452d6b7b75d8682c02436e6bbb9ed28119f5935c09b7b0985f8d8800a"

// genSnapCacheVectors: the master key is 32 bytes of 0x42, as in put-cache.json.
func genSnapCacheVectors() []cacheVector {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	nonce := bytes.Repeat([]byte{0x0c}, recordHeader-1)
	ds := map[uint64]snapDesc{
		3: {size: 1234, written: time.Unix(0, 1764400000500000000), snap: Snapshot{Seq: 3, Time: time.Unix(0, 1764400000000000001), Files: 7, Records: 9,
			SHA256: hex.EncodeToString(bytes.Repeat([]byte{0xaa}, 32))}},
		10: {size: 98765, snap: Snapshot{Seq: 10, Time: time.Unix(0, 1764400060000000000), Files: 1, Records: 2,
			SHA256: hex.EncodeToString(bytes.Repeat([]byte{0x01}, 32))}},
	}
	const loc = "veil://store.example:8443"
	good := k.sealSnapCache(ds, loc, nonce)
	out := []cacheVector{{Location: loc, Plain: hex.EncodeToString(marshalSnapCache(ds)), Sealed: hex.EncodeToString(good), Result: "ok"}}
	bad := func(comment, loc string, b []byte) {
		out = append(out, cacheVector{Comment: comment, Location: loc, Sealed: hex.EncodeToString(b), Result: "reject"})
	}
	bad("another storage location", "veil://other.example:8443", good)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-20] ^= 1
	bad("one bit flipped", loc, flipped)
	bad("unknown version", loc, append([]byte{3}, good[1:]...))
	v1, _ := hex.DecodeString(snapCacheV1)
	bad("version 1 (no listed time): not used, rebuilt", loc, v1)
	bad("truncated", loc, good[:len(good)-1])
	bad("a put cache file (same key, another purpose)", loc,
		k.sealCache(&cacheFile{Entries: map[string]cacheEntry{}}, loc, nonce))
	return out
}

func TestSnapshotCacheVectors(t *testing.T) {
	var v []cacheVector
	testutil.Vectors(t, snapCacheVectorFile, &v, func() any { return genSnapCacheVectors() })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	for i, cv := range v {
		ds, err := k.openSnapCache(testutil.Unhex(t, cv.Sealed), cv.Location)
		if cv.Result == "reject" {
			if err == nil {
				t.Errorf("snapshot cache %d (%s): accepted", i, cv.Comment)
			}
			continue
		}
		if err != nil {
			t.Fatalf("snapshot cache %d: %v", i, err)
		}
		if !bytes.Equal(marshalSnapCache(ds), testutil.Unhex(t, cv.Plain)) ||
			!bytes.Equal(k.sealSnapCache(ds, cv.Location, testutil.Unhex(t, cv.Sealed)[1:recordHeader]), testutil.Unhex(t, cv.Sealed)) {
			t.Errorf("snapshot cache %d: parsed or sealed differently from the vector", i)
		}
	}
}

// FuzzOpenSnapCache: arbitrary bytes as a sealed snapshot cache and as its plaintext:
// errors, never panics, and what parses re-encodes exactly.
func FuzzOpenSnapCache(f *testing.F) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{1}, MasterKeySize))
	ds := map[uint64]snapDesc{5: {size: 10, snap: Snapshot{Seq: 5, Time: time.Unix(0, 77), SHA256: hex.EncodeToString(make([]byte, 32))}}}
	f.Add(k.sealSnapCache(ds, "loc", make([]byte, recordHeader-1)), marshalSnapCache(ds))
	f.Add([]byte{1}, marshalSnapCache(nil))
	f.Fuzz(func(t *testing.T, sealed, plain []byte) {
		k.openSnapCache(sealed, "loc")
		ds, err := unmarshalSnapCache(plain)
		if err == nil && !bytes.Equal(marshalSnapCache(ds), plain) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// The storage service restored from a backup (and accepted: veil root accept) numbers
// its next roots as those it lost: the same tree put again makes roots of the same numbers
// and sizes, other bytes. A description kept of a lost root is not taken for the new one:
// found by review, the listing showed the lost roots' times, and diff or get --at of such
// a snapshot failed for good with "tree root N is not the one listed".
func TestSnapshotCacheAfterRestore(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	be := newBackendAt(t, store)
	dev := newDevice(t, "/srv/restored")
	master := NewMasterKey()
	src := filepath.Join(t.TempDir(), "src")
	version := func(i int) {
		write(t, filepath.Join(src, "f"), randBytes(100+i, uint64(i)))
		dev.put(t, be, master, src, "")
	}
	open := func() *Client {
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Roots: dev.mem, Cache: dev.cache,
			Logger: slog.New(slog.NewTextHandler(dev.logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	version(0)
	version(1)
	if err := os.CopyFS(filepath.Join(dir, "backup"), os.DirFS(store)); err != nil {
		t.Fatal(err)
	}
	version(2)
	version(3)
	version(4)
	lost, err := open().Snapshots(ctx) // described: 1 to 5
	if err != nil || len(lost) != 5 {
		t.Fatalf("before the restore: %v %v", lost, err)
	}
	time.Sleep(10 * time.Millisecond) // the roots put again are of another time
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "backup"), store); err != nil {
		t.Fatal(err)
	}
	if _, err := open().AcceptRoot(ctx); err != nil {
		t.Fatal(err)
	}
	version(2)
	version(3)
	version(4)
	snaps, err := open().Snapshots(ctx)
	if err != nil || len(snaps) != 5 {
		t.Fatalf("after the restore: %v %v", snaps, err)
	}
	fresh, err := open().loadRoots(ctx)
	if err != nil || len(fresh) != len(snaps) {
		t.Fatalf("roots: %d, %v", len(fresh), err)
	}
	for i, s := range snaps {
		if s.SHA256 != hex.EncodeToString(fresh[i].sum[:]) || !s.Time.Equal(time.Unix(0, fresh[i].Time)) {
			t.Errorf("snapshot %d listed as of %v (%s), stored of %v: a lost root's description", s.Seq, s.Time, s.SHA256, time.Unix(0, fresh[i].Time))
		}
	}
	if _, err := open().Diff(ctx, "3", "4", ""); err != nil {
		t.Fatalf("diff 3 4 after the restore: %v", err)
	}
	if _, err := open().PinTime(ctx, snaps[3].Time); err != nil {
		t.Fatalf("pin to snapshot 4's time after the restore: %v", err)
	}
}
