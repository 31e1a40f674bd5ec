package dupless

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
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

// A version 1 record (written before records named their chunks' scheme) must not be a
// way around the check: its chunks are accepted only under guarded schemes.
func TestDowngradeOfVersion1Record(t *testing.T) {
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
	ref.Suite, ref.Scheme = 0, 0 // what a version 1 record holds
	ct, err := os.ReadFile(chunkPath(t, c, be.Root(), "a", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decryptChunk(&ref, ct); err != nil {
		t.Fatalf("honest chunk under a version 1 reference: %v", err)
	}
	ct[1] = byte(mle.HCE1)
	ct[mle.HeaderSize] ^= 1
	if msg, err := decryptChunk(&ref, ct); !errors.Is(err, ErrIntegrity) || msg != nil {
		t.Fatalf("downgraded chunk under a version 1 reference: %v", err)
	}
}
