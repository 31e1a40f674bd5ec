package dupless

import (
	"bytes"
	"context"
	"errors"
	"github.com/veil-project/veil/internal/testutil"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/verr"
)

// Attacks by a malicious storage service, played through the objects it holds (a local
// backend here: the service sees exactly these bytes). Each must end in an integrity error
// for the file concerned, nothing at its destination, never altered plaintext.

// downgrade relabels an HCE2 chunk as HCE1 (which has no guarded decryption) and XORs
// chosen bytes into its body: AES-CTR is malleable, so without the record binding the
// scheme this turns into plaintext altered exactly as the attacker chose.
func downgrade(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b[1] != byte(mle.HCE2) {
		t.Fatalf("chunk scheme %d, want HCE2", b[1])
	}
	b[1] = byte(mle.HCE1)
	for i := mle.HeaderSize; i < mle.HeaderSize+16 && i < len(b)-mle.Size; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func chunkPath(t *testing.T, c *Client, root, name string, i int) string {
	t.Helper()
	enc, _ := c.keys.encName(name)
	r, err := c.readRecord(ctx, "", enc+keySuffix)
	if err != nil {
		t.Fatal(err)
	}
	if i >= len(r.Chunks) {
		t.Fatalf("%s has %d chunks, want > %d", name, len(r.Chunks), i)
	}
	d, n := chunkLocation(r.Chunks[i].Tag)
	return filepath.Join(root, filepath.FromSlash(d), n)
}

// wantIntegrityFailure gets everything and expects exactly file to fail with want and to be
// absent at the destination.
func wantIntegrityFailure(t *testing.T, c *Client, file string, want error) {
	t.Helper()
	out := t.TempDir()
	sum, err := c.Get(ctx, "", out)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Errors) != 1 || sum.Errors[0].Path != file || !strings.Contains(sum.Errors[0].Err, want.Error()) {
		t.Fatalf("errors = %v, want one %q for %s", sum.Errors, want, file)
	}
	if _, err := os.Stat(filepath.Join(out, file)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s reached its destination", file)
	}
}

func TestDowngradeToHCE1SingleChunk(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), randBytes(5000, 1)) // incompressible: no zstd frame to break
	write(t, filepath.Join(dir, "b"), randBytes(3000, 2))
	if _, err := c.Put(ctx, []string{dir + "/a", dir + "/b"}, ""); err != nil {
		t.Fatal(err)
	}
	downgrade(t, chunkPath(t, c, be.Root(), "a", 0))
	wantIntegrityFailure(t, c, "a", ErrIntegrity)
}

func TestDowngradeToHCE1MultiChunk(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	big := randBytes(3<<20, 7)
	write(t, filepath.Join(dir, "big"), big)
	if _, err := c.Put(ctx, []string{dir + "/big"}, ""); err != nil {
		t.Fatal(err)
	}
	downgrade(t, chunkPath(t, c, be.Root(), "big", 1)) // a middle chunk
	wantIntegrityFailure(t, c, "big", ErrIntegrity)
}

// storedChunk stores a file "a" of one chunk and returns the backend, the client, the
// chunk's reference in the key record and the chunk object's bytes.
func storedChunk(t *testing.T) (*local.Backend, *Client, chunkRef, []byte) {
	t.Helper()
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), bytes.Repeat([]byte("attack at dawn. "), 600))
	if _, err := c.Put(ctx, []string{dir + "/a"}, ""); err != nil {
		t.Fatal(err)
	}
	enc, _ := c.keys.encName("a")
	r, err := c.readRecord(ctx, "", enc+keySuffix)
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Chunks[0]
	ct, err := os.ReadFile(chunkPath(t, c, be.Root(), "a", 0))
	if err != nil {
		t.Fatal(err)
	}
	return be, c, ref, ct
}

// A version 1 record (written before records named their chunks' scheme) must not be a
// way around the check: its chunks are accepted only under guarded schemes.
func TestDowngradeOfVersion1Record(t *testing.T) {
	_, _, ref, ct := storedChunk(t)
	ref.Suite, ref.Scheme = 0, 0 // what a version 1 record holds
	if _, err := decryptChunk(&ref, ct); err != nil {
		t.Fatalf("honest chunk under a version 1 reference: %v", err)
	}
	ct[1] = byte(mle.HCE1)
	ct[mle.HeaderSize] ^= 1
	if msg, err := decryptChunk(&ref, ct); !errors.Is(err, ErrIntegrity) || msg != nil {
		t.Fatalf("downgraded chunk under a version 1 reference: %v", err)
	}
}

// A chunk that fails guarded decryption is dupless's integrity error, wrapping mle's reason,
// and the one integrity error every package wraps; one that fails decompression keeps the
// decompressor's reason too.
func TestIntegrityErrorWrapsItsCause(t *testing.T) {
	be, c, ref, ct := storedChunk(t)
	ct[mle.HeaderSize] ^= 1
	_, err := decryptChunk(&ref, ct)
	if !errors.Is(err, ErrIntegrity) || !errors.Is(err, mle.ErrIntegrity) || !errors.Is(err, verr.ErrIntegrity) {
		t.Fatalf("tampered chunk: %v", err)
	}
	if errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("tampered chunk reads as the storage service's failure: %v", err)
	}
	// A chunk that decrypts (under its recorded key) to no zstd frame, while its reference
	// says compressed: the decompressor's reason is kept in the chain.
	msg := []byte("not a zstd frame at all")
	m := c.mleFor(len(msg))
	p := piece{plainLen: 100, flags: flagCompressed, msg: msg, digest: m.Hash(msg)}
	e := c.encryptChunk(p, chunkRef{Key: mle.Key(p.digest), Digest: p.digest, Flags: flagCompressed, PlainLen: 100, MsgLen: uint32(len(msg))})
	if e.err != nil {
		t.Fatal(e.err)
	}
	d, name := chunkLocation(e.ref.Tag)
	if err := be.Put(ctx, d, name, bytes.NewReader(e.ct), int64(len(e.ct))); err != nil {
		t.Fatal(err)
	}
	_, zerr := zdec.DecodeAll(msg, nil)
	_, err = c.fetchChunk(ctx, &e.ref)
	if zerr == nil || !errors.Is(err, ErrIntegrity) || !errors.Is(err, verr.ErrIntegrity) || !errors.Is(err, zerr) {
		t.Fatalf("undecompressable chunk: %v (decompressor: %v)", err, zerr)
	}
}

func clientWith(t *testing.T, be storage.Backend, master []byte, mem RootMemory) *Client {
	t.Helper()
	c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3, Roots: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestWrongKeyReadsFail(t *testing.T) {
	be := newBackend(t)
	owner, intruder := newClient(t, be, mle.LocalKeys{}), newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f"), randBytes(4000, 1))
	if _, err := owner.Put(ctx, []string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := intruder.Get(ctx, "", t.TempDir()); !errors.Is(err, ErrForeignKey) {
		t.Errorf("get: %v, want ErrForeignKey", err)
	}
	if _, err := intruder.List(ctx, "", true); !errors.Is(err, ErrForeignKey) {
		t.Errorf("ls: %v, want ErrForeignKey", err)
	}
	if _, err := intruder.Find(ctx, "f"); !errors.Is(err, ErrForeignKey) {
		t.Errorf("find: %v, want ErrForeignKey", err)
	}
}

// putVersions stores a, then a changed a, and returns the first version's record bytes.
func putVersions(t *testing.T, c *Client, dir string) (encA string, old []byte) {
	t.Helper()
	write(t, filepath.Join(dir, "a"), []byte("version one"))
	write(t, filepath.Join(dir, "b"), []byte("bystander"))
	if _, err := c.Put(ctx, []string{dir + "/a", dir + "/b"}, ""); err != nil {
		t.Fatal(err)
	}
	encA, _ = c.keys.encName("a")
	old = testutil.GetObject(t, c.be, "", encA+keySuffix)
	write(t, filepath.Join(dir, "a"), []byte("version two, longer"))
	if _, err := c.Put(ctx, []string{dir + "/a"}, ""); err != nil {
		t.Fatal(err)
	}
	return encA, old
}

func TestRecordRollbackDetected(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	encA, old := putVersions(t, c, t.TempDir())
	testutil.PutObject(t, be, "", encA+keySuffix, old) // an older, authentic record
	wantIntegrityFailure(t, c, "a", ErrStale)
	if _, err := c.Get(ctx, "a", filepath.Join(t.TempDir(), "a")); !errors.Is(err, ErrStale) {
		// a single-file get fails in the file's own error
		sum, _ := c.Get(ctx, "a", filepath.Join(t.TempDir(), "a"))
		if sum == nil || len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0].Err, ErrStale.Error()) {
			t.Errorf("get a: %v %v, want ErrStale", err, sum.Errors)
		}
	}
	es, err := c.List(ctx, "", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if (e.Path == "a") != strings.Contains(e.Err, ErrStale.Error()) {
			t.Errorf("ls -l: %s error %q", e.Path, e.Err)
		}
	}
	// The explicit flag turns the error into a warning.
	c.opts.RootCheck = RootWarn
	if sum, err := c.Get(ctx, "", t.TempDir()); err != nil || sum.Err() != nil {
		t.Errorf("with RootWarn: %v %v", err, sum.Err())
	}
}

func TestRecordDeletionDetected(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	encA, _ := putVersions(t, c, t.TempDir())
	if err := be.Delete(ctx, "", encA+keySuffix); err != nil {
		t.Fatal(err)
	}
	wantIntegrityFailure(t, c, "a", ErrStale)
	if _, err := c.Get(ctx, "a", filepath.Join(t.TempDir(), "a")); !errors.Is(err, ErrStale) {
		t.Errorf("get a: %v, want ErrStale", err)
	}
	if _, err := c.List(ctx, "a", false); !errors.Is(err, ErrStale) {
		t.Errorf("ls a: %v, want ErrStale", err)
	}
	es, err := c.List(ctx, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Path != "a" || !strings.Contains(es[0].Err, "deleted") || es[1].Err != "" {
		t.Errorf("ls: %+v, want a marked deleted and b fine", es)
	}
	if _, err := c.Prune(ctx, 0, false); !errors.Is(err, ErrStale) {
		t.Errorf("prune: %v, want it to stop on ErrStale", err)
	}
}

func TestRecordSwapBetweenOwnFilesDetected(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	encA, _ := putVersions(t, c, t.TempDir())
	encB, _ := c.keys.encName("b")
	a, b := testutil.GetObject(t, be, "", encA+keySuffix), testutil.GetObject(t, be, "", encB+keySuffix)
	testutil.PutObject(t, be, "", encA+keySuffix, b)
	testutil.PutObject(t, be, "", encB+keySuffix, a)
	sum, err := c.Get(ctx, "", t.TempDir())
	if err != nil || len(sum.Errors) != 2 {
		t.Fatalf("get: %v, errors %v; want both files refused", err, sum.Errors)
	}
	for _, e := range sum.Errors {
		if !strings.Contains(e.Err, ErrRecord.Error()) {
			t.Errorf("%s: %s, want %v", e.Path, e.Err, ErrRecord)
		}
	}
}

// The service presents an older root (and the records it lists): a device that saw the
// newer one refuses; 'root accept' trusts it again.
func TestRootRollbackDetected(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	mem := RootFile(filepath.Join(t.TempDir(), "roots.mem"), "")
	c := clientWith(t, be, master, mem)
	encA, old := putVersions(t, c, t.TempDir())
	info, err := c.Root(ctx)
	if err != nil || info == nil || info.Seq != 2 {
		t.Fatalf("root after two puts: %+v %v", info, err)
	}
	// Roll everything back to after the first put: record and root.
	testutil.PutObject(t, be, "", encA+keySuffix, old)
	if err := be.Delete(ctx, rootsDir, rootName(2)); err != nil {
		t.Fatal(err)
	}
	later := clientWith(t, be, master, mem) // the same device, a later command
	if _, err := later.Get(ctx, "", t.TempDir()); !errors.Is(err, ErrRollback) {
		t.Fatalf("get after root rollback: %v, want ErrRollback", err)
	}
	if _, err := later.List(ctx, "", false); !errors.Is(err, ErrRollback) {
		t.Fatalf("ls after root rollback: %v, want ErrRollback", err)
	}
	// Deleting every root is no way out either.
	if err := be.Delete(ctx, rootsDir, rootName(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := later.Get(ctx, "", t.TempDir()); !errors.Is(err, ErrRollback) {
		t.Fatalf("get with no root left: %v, want ErrRollback", err)
	}
}

// A command that wrote records but could not publish its root (crash, network) leaves
// them unlisted: reads never return them; they return the version the newest root lists
// (kept before it was replaced), and running the command again publishes the new one.
func TestUnpublishedPutIsRepairedByAnotherPut(t *testing.T) {
	be := newBackend(t)
	fail := &noRootsBE{Backend: be}
	c := newClient(t, fail, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), []byte("first"))
	if _, err := c.Put(ctx, []string{dir + "/a"}, ""); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a"), []byte("second version"))
	fail.on = true
	if _, err := c.Put(ctx, []string{dir + "/a"}, ""); err == nil || !strings.Contains(err.Error(), "tree root") {
		t.Fatalf("put without roots: %v, want a tree root error", err)
	}
	fail.on = false
	before := t.TempDir()
	if sum, err := c.Get(ctx, "a", filepath.Join(before, "a")); err != nil || sum.Err() != nil {
		t.Fatalf("get of the published version: %v %v", err, sum.Err())
	}
	if b, _ := os.ReadFile(filepath.Join(before, "a")); string(b) != "first" {
		t.Fatalf("before the repair a = %q, want the published version", b)
	}
	if _, err := c.Put(ctx, []string{dir + "/a"}, ""); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if sum, err := c.Get(ctx, "", out); err != nil || sum.Err() != nil {
		t.Fatalf("get after the repair: %v %v", err, sum.Err())
	}
	if b, _ := os.ReadFile(filepath.Join(out, "a")); string(b) != "second version" {
		t.Fatalf("a = %q", b)
	}
}

// noRootsBE refuses to move anything into .veil/roots while on.
type noRootsBE struct {
	storage.Backend
	on bool
}

func (b *noRootsBE) Move(ctx context.Context, sd, sn, dd, dn string) error {
	if b.on && dd == rootsDir {
		return errors.New("injected: connection reset")
	}
	return b.Backend.Move(ctx, sd, sn, dd, dn)
}
