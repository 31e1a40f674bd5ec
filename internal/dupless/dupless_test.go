package dupless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

var ctx = context.Background()

func randBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := mrand.New(mrand.NewPCG(seed, 99))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func newBackend(t *testing.T) *local.Backend {
	be, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return be
}

func newClient(t *testing.T, be storage.Backend, kd mle.KeyDeriver) *Client {
	c, err := New(be, NewMasterKey(), Options{Keys: kd, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// devices returns a maker of clients over be that share one new master key: devices of
// one user, each with its own local state.
func devices(t *testing.T, be storage.Backend) func() *Client {
	master := NewMasterKey()
	return func() *Client {
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeTree builds a source tree exercising every kind of entry veil stores.
func makeTree(t *testing.T) string {
	src := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(src, "empty.txt"), nil)
	write(t, filepath.Join(src, "one"), []byte("x"))
	write(t, filepath.Join(src, "text.md"), bytes.Repeat([]byte("compressible line of text\n"), 5000))
	write(t, filepath.Join(src, "big.bin"), randBytes(3<<20+17, 1)) // several chunks
	write(t, filepath.Join(src, "d1", "d2", "d3", "deep file with spaces"), []byte("deep"))
	write(t, filepath.Join(src, "ünïcødé", "日本語.txt"), []byte("unicode"))
	os.Chmod(filepath.Join(src, "one"), 0o600)
	os.MkdirAll(filepath.Join(src, "empty dir"), 0o750)
	os.Symlink("text.md", filepath.Join(src, "link"))
	old := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	os.Chtimes(filepath.Join(src, "text.md"), old, old)
	return src
}

// sameTree compares two trees: kinds, bytes, modes, file mtimes and link targets.
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	n := 0
	filepath.Walk(a, func(p string, fa fs.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(a, p)
		q := filepath.Join(b, rel)
		fb, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%s: missing after get: %v", rel, err)
			return nil
		}
		n++
		if fa.Mode() != fb.Mode() {
			t.Errorf("%s: mode %v, want %v", rel, fb.Mode(), fa.Mode())
		}
		switch {
		case fa.Mode().IsRegular():
			da, _ := os.ReadFile(p)
			db, _ := os.ReadFile(q)
			if !bytes.Equal(da, db) {
				t.Errorf("%s: content differs (%d vs %d bytes)", rel, len(da), len(db))
			}
			if !fa.ModTime().Equal(fb.ModTime()) {
				t.Errorf("%s: mtime %v, want %v", rel, fb.ModTime(), fa.ModTime())
			}
		case fa.Mode()&fs.ModeSymlink != 0:
			ta, _ := os.Readlink(p)
			tb, _ := os.Readlink(q)
			if ta != tb {
				t.Errorf("%s: link to %q, want %q", rel, tb, ta)
			}
		}
		return nil
	})
	if n < 10 {
		t.Fatalf("compared only %d entries", n)
	}
}

func TestPutGetTree(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := makeTree(t)
	sum, err := c.Put(ctx, []string{src}, "backup")
	if err != nil || sum.Err() != nil {
		t.Fatalf("put: %v %v", err, sum.Err())
	}
	if sum.Files != 6 || sum.Symlinks != 1 || sum.FallbackFiles() != 0 {
		t.Fatalf("summary: %+v", sum)
	}
	if sum.Chunks < 4+3 { // four one-chunk files, an empty one, and at least three for big.bin
		t.Fatalf("the 3 MiB file should be several chunks; %d chunks in all", sum.Chunks)
	}
	// Nothing on the storage service is plaintext: no name, no content.
	filepath.Walk(be.Root(), func(p string, fi fs.FileInfo, err error) error {
		// A name, not a substring: an encrypted name is random base64, which holds "src"
		// now and then (it did: "phN8PPUpXpBOQOc2UsrcCjN1VsCdEQ").
		base := fi.Name()
		if i := strings.IndexByte(base, '.'); i > 0 {
			base = base[:i]
		}
		for _, plain := range []string{"backup", "src", "text", "deep", "ünïcødé", "日本語"} {
			if base == plain {
				t.Errorf("plaintext name on the storage service: %s", p)
			}
		}
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte("compressible line")) || bytes.Contains(b, []byte("unicode")) {
				t.Errorf("plaintext content on the storage service: %s", p)
			}
		}
		return nil
	})
	dst := filepath.Join(t.TempDir(), "restored")
	gs, err := c.Get(ctx, "backup/src", dst)
	if err != nil || gs.Err() != nil {
		t.Fatalf("get: %v %v", err, gs.Err())
	}
	sameTree(t, src, dst)
	// A single file to an explicit name.
	one := filepath.Join(t.TempDir(), "copy")
	if _, err := c.Get(ctx, "backup/src/big.bin", one); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(src, "big.bin"))
	if got, _ := os.ReadFile(one); !bytes.Equal(got, want) {
		t.Fatal("single file get differs")
	}
}

func TestListFindMoveRemove(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	src := makeTree(t)
	if _, err := c.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	es, err := c.List(ctx, "src", true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Path)
		if e.Path == "src/text.md" && (e.Size != 130000 || e.Mode != 0o644) {
			t.Errorf("ls -l text.md: %+v", e)
		}
		if e.Path == "src/link" && e.Symlink != "text.md" {
			t.Errorf("ls -l link: %+v", e)
		}
	}
	want := "src/big.bin src/d1 src/empty dir src/empty.txt src/link src/one src/text.md src/ünïcødé"
	if strings.Join(names, " ") != want {
		t.Fatalf("ls = %q\nwant %q", strings.Join(names, " "), want)
	}
	if hits, err := c.Find(ctx, "deep file with spaces"); err != nil || len(hits) != 1 || hits[0] != "src/d1/d2/d3/deep file with spaces" {
		t.Fatalf("find = %v, %v", hits, err)
	}
	if hits, _ := c.Find(ctx, "d2"); len(hits) != 1 || hits[0] != "src/d1/d2" {
		t.Fatalf("find dir = %v", hits)
	}
	// Move a file and a directory; contents stay readable under the new names.
	if err := c.Move(ctx, "src/one", "src/d1/two"); err != nil {
		t.Fatal(err)
	}
	if err := c.Move(ctx, "src/d1", "moved/d1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Move(ctx, "src/text.md", "moved/d1/two"); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("move onto an existing file: %v", err)
	}
	out := t.TempDir()
	if s, err := c.Get(ctx, "moved", out); err != nil || s.Err() != nil || s.Files != 2 {
		t.Fatalf("get moved: %v %v %+v", err, s.Err(), s)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "d1", "two")); string(b) != "x" {
		t.Fatalf("moved file = %q", b)
	}
	if _, err := c.List(ctx, "src/d1", false); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("old directory still there: %v", err)
	}
	// Remove, then prune reclaims the chunks nothing references any more.
	if _, err := c.Remove(ctx, "moved", false); err == nil {
		t.Fatal("removed a directory without -r")
	}
	if _, err := c.Remove(ctx, "src/big.bin", false); err != nil {
		t.Fatal(err)
	}
	// The snapshots still hold big.bin: prune keeps its chunks until they are forgotten.
	pr, err := c.Prune(ctx, 0, false)
	if err != nil || pr.ChunksRemoved != 0 {
		t.Fatalf("prune with every snapshot kept: %+v %v", pr, err)
	}
	if _, err := c.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	pr, err = c.Prune(ctx, 0, false)
	if err != nil || pr.ChunksRemoved < 3 {
		t.Fatalf("prune: %+v %v", pr, err)
	}
	if s, err := c.Get(ctx, "", t.TempDir()); err != nil || s.Err() != nil {
		t.Fatalf("everything left must still read after prune: %v %v", err, s.Err())
	}
}

// Two users with different master keys and one key server: their identical content
// encrypts to identical chunk objects (dedup), their names do not match.
func TestCrossUserDedup(t *testing.T) {
	beA, beB := newBackend(t), newBackend(t)
	a, b := newClient(t, beA, mle.LocalKeys{}), newClient(t, beB, mle.LocalKeys{})
	src := makeTree(t)
	if _, err := a.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	ca, cb := chunkFiles(t, beA), chunkFiles(t, beB)
	if len(ca) == 0 || strings.Join(ca, ",") != strings.Join(cb, ",") {
		t.Fatalf("users' chunk objects differ: %d vs %d", len(ca), len(cb))
	}
	la, _ := beA.List(ctx, "")
	lb, _ := beB.List(ctx, "")
	for _, x := range la {
		for _, y := range lb {
			if x.Name == y.Name && !isInternal(x.Name) {
				t.Errorf("two users' encrypted names collide: %s", x.Name)
			}
		}
	}
}

// chunkFiles lists a backend's chunk objects as "name:size:sha256 of the bytes".
func chunkFiles(t *testing.T, be *local.Backend) []string {
	var out []string
	filepath.Walk(filepath.Join(be.Root(), ".veil", "chunks"), func(p string, fi fs.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			out = append(out, fmt.Sprintf("%s:%d:%x", fi.Name(), len(b), sha256.Sum256(b)))
		}
		return nil
	})
	return out
}

type failingKS struct{ err error }

func (f failingKS) DeriveKeys(context.Context, []mle.Digest) ([]mle.Key, error) { return nil, f.err }

// A dead key server never costs data: files go under random keys, read back, and the
// summary says why.
func TestFallbackWhenKeyServerFails(t *testing.T) {
	c := newClient(t, newBackend(t), failingKS{errors.New("key server unavailable: connection refused")})
	src := makeTree(t)
	sum, err := c.Put(ctx, []string{src}, "")
	if err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	if sum.FallbackFiles() != 5 { // every non-empty file
		t.Fatalf("fallback files = %d (%v)", sum.FallbackFiles(), sum.Fallback)
	}
	for r := range sum.Fallback {
		if !strings.Contains(r, "connection refused") {
			t.Fatalf("fallback reason %q", r)
		}
	}
	dst := t.TempDir() + "/r"
	if _, err := c.Get(ctx, "src", dst); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, dst)
	es, _ := c.List(ctx, "src/big.bin", true)
	if !es[0].Fallback {
		t.Fatal("ls -l does not show the fallback")
	}
}

// Editing the middle of a large file re-uploads only the chunks around the edit.
func TestEditReuploadsOnlyChangedChunks(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	dir := t.TempDir()
	data := randBytes(24<<20, 5)
	write(t, filepath.Join(dir, "big"), data)
	s1, _ := c.Put(ctx, []string{filepath.Join(dir, "big")}, "")
	copy(data[12<<20:], []byte("an edit in the middle"))
	write(t, filepath.Join(dir, "big"), data)
	s2, err := c.Put(ctx, []string{filepath.Join(dir, "big")}, "")
	if err != nil {
		t.Fatal(err)
	}
	if s2.ChunksUploaded > 2 || s2.ChunksKept < s1.Chunks-2 {
		t.Fatalf("after a small edit: %d uploaded, %d kept of %d", s2.ChunksUploaded, s2.ChunksKept, s2.Chunks)
	}
	out := filepath.Join(t.TempDir(), "big")
	if _, err := c.Get(ctx, "big", out); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
		t.Fatal("edited file reads back wrong")
	}
}

func TestSpecialFilesAreReportedNotFatal(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "ok"), []byte("fine"))
	write(t, filepath.Join(dir, "secret"), []byte("unreadable"))
	os.Chmod(filepath.Join(dir, "secret"), 0)
	long := strings.Repeat("n", MaxNameLen+1) // stored under a tag (longnames.go)
	write(t, filepath.Join(dir, long), []byte("long name"))
	sum, err := c.Put(ctx, []string{dir}, "x")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range sum.Errors {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	if os.Geteuid() != 0 && !strings.Contains(joined, "permission denied") {
		t.Errorf("unreadable file not reported: %q", joined)
	}
	if es, _ := c.List(ctx, "x/"+filepath.Base(dir)+"/ok", false); len(es) != 1 {
		t.Fatal("the good file was not stored")
	}
	if es, _ := c.List(ctx, "x/"+filepath.Base(dir)+"/"+long, false); len(es) != 1 {
		t.Fatal("the long-named file was not stored")
	}
}

// countingKS is plain MLE key derivation that counts the digests it is asked for.
type countingKS struct{ n atomic.Int64 }

func (k *countingKS) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	k.n.Add(int64(len(ds)))
	return mle.LocalKeys{}.DeriveKeys(ctx, ds)
}

// Copies of one file in a single run are derived, encrypted and sent once.
func TestCopiesInOneRunSentOnce(t *testing.T) {
	ks := &countingKS{}
	c := newClient(t, newBackend(t), ks)
	dir := t.TempDir()
	data := randBytes(6<<20, 11)
	for i := range 4 {
		write(t, filepath.Join(dir, "copy"+string(rune('a'+i))), data)
	}
	sum, err := c.Put(ctx, []string{dir}, "")
	if err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	perCopy := sum.Chunks / 4
	if perCopy < 3 || sum.ChunksUploaded != perCopy || sum.ChunksKept != 3*perCopy {
		t.Fatalf("4 copies of %d chunks: %d uploaded, %d kept", perCopy, sum.ChunksUploaded, sum.ChunksKept)
	}
	if n := ks.n.Load(); n != int64(perCopy) {
		t.Fatalf("%d digests sent to the key server for %d distinct chunks", n, perCopy)
	}
	// A file of one repeated block asks for its key once.
	ks.n.Store(0)
	write(t, filepath.Join(dir, "zeros"), make([]byte, 16<<20))
	if _, err := c.Put(ctx, []string{filepath.Join(dir, "zeros")}, ""); err != nil {
		t.Fatal(err)
	}
	if n := ks.n.Load(); n != 1 {
		t.Fatalf("16 MiB of zeros: %d digests sent, want 1", n)
	}
	out := t.TempDir()
	if s, err := c.Get(ctx, "", out); err != nil || s.Err() != nil {
		t.Fatal(err, s.Err())
	}
	for i := range 4 {
		got, _ := os.ReadFile(filepath.Join(out, filepath.Base(dir), "copy"+string(rune('a'+i))))
		if !bytes.Equal(got, data) {
			t.Fatalf("copy %d differs", i)
		}
	}
}

// Small chunks use the SHA-256 suite, large ones BLAKE3 (the faster hash for each size).
func TestSuiteBySize(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "small"), randBytes(3000, 1))
	write(t, filepath.Join(dir, "large"), randBytes(100_000, 2))
	if _, err := c.Put(ctx, []string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	suites := map[int]mle.Suite{}
	filepath.Walk(filepath.Join(be.Root(), ".veil", "chunks"), func(p string, fi fs.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			s, _, _ := mle.Parse(b)
			suites[len(b)] = s
		}
		return nil
	})
	if len(suites) != 2 {
		t.Fatalf("chunk objects: %v", suites)
	}
	for n, s := range suites {
		if want := mle.SuiteFor(n - 34); s != want {
			t.Errorf("%d-byte chunk object uses %v, want %v", n, s, want)
		}
	}
}
