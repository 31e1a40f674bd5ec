package oblivisync

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/verr"
)

// syncedBackend returns a backend with one 40 KB file fully synced, and that file's inode.
func syncedBackend(t *testing.T) (string, uint64, []byte) {
	dir := newBackend(t, 16, 16<<10, 4)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	f := must(w.Create(rootIno, "secret.txt", 0o600, 0, 0))
	data := bytes.Repeat([]byte("attack at dawn "), 2700)
	must(w.Write(f.Ino, 0, data))
	drain(t, w, 500)
	return dir, f.Ino, data
}

func TestWrongPassphrase(t *testing.T) {
	dir, _, _ := syncedBackend(t)
	_, err := OpenReader(dir, []byte("not the passphrase"))
	if !errors.Is(err, ErrWrongPassphrase) || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("got %v, want ErrWrongPassphrase", err)
	}
	if err := CheckPassphrase(dir, []byte("not the passphrase")); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("CheckPassphrase: got %v, want ErrWrongPassphrase", err)
	}
	if err := CheckPassphrase(dir, testPass); err != nil {
		t.Fatalf("CheckPassphrase with the right one: %v", err)
	}
	if err := CheckPassphrase(t.TempDir(), testPass); err == nil || !strings.Contains(err.Error(), "not an osync backend") {
		t.Fatalf("CheckPassphrase of an empty folder: %v", err)
	}
	_, err = OpenWriter(dir, []byte("nope"), Options{StateDir: t.TempDir()})
	if !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("writer: got %v", err)
	}
	// Altering the authenticated parameters in the key file looks like a wrong passphrase.
	kp := filepath.Join(dir, keyFileName)
	raw := must(os.ReadFile(kp))
	raw[keyHdrLen-5]++ // drip rate k
	os.WriteFile(kp, raw, 0o600)
	if _, err := OpenReader(dir, testPass); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("altered key file: got %v", err)
	}
}

func TestTamperedBackendFiles(t *testing.T) {
	dir, ino, data := syncedBackend(t)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data))
	if n, err := r.Read(ino, 0, buf); err != nil || !bytes.Equal(buf[:n], data) {
		t.Fatalf("clean read: %d %v", n, err)
	}
	// Flip one ciphertext bit in every file that holds a fragment of the secret.
	sb := must(r.be.readSuper())
	files := map[uint32]bool{}
	for _, fr := range r.t.get(ino).Frags {
		files[fr.File] = true
	}
	for f := range files {
		p := filepath.Join(dir, blockName(f))
		raw := must(os.ReadFile(p))
		raw[len(raw)/2] ^= 1
		os.WriteFile(p, raw, 0o600)
	}
	r2, err := OpenReader(dir, testPass)
	if err == nil {
		_, err = r2.Read(ino, 0, buf)
	}
	if !errors.Is(err, ErrIntegrity) || !errors.Is(err, verr.ErrIntegrity) || !strings.Contains(err.Error(), "failed authentication") {
		t.Fatalf("tampered block: got %v, want ErrIntegrity naming the file", err)
	}
	// A tampered superblock stops the reader at open, with a message saying so.
	raw := must(os.ReadFile(filepath.Join(dir, superName)))
	raw[100] ^= 0x80
	os.WriteFile(filepath.Join(dir, superName), raw, 0o600)
	if _, err := OpenReader(dir, testPass); !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "superblock") {
		t.Fatalf("tampered superblock: got %v", err)
	}
	_ = sb
}

func TestSwappedAndRolledBackFiles(t *testing.T) {
	dir := newBackend(t, 8, 16<<10, 2)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	rep := must(w.Sync())
	f := uint32(rep.Files[0])
	old := must(os.ReadFile(filepath.Join(dir, blockName(f))))
	for w.sb.Written[f] == rep.Epoch { // until f is rewritten
		must(w.Sync())
	}
	// Rollback: put back an older (authentic) version of f.
	os.WriteFile(filepath.Join(dir, blockName(f)), old, 0o600)
	r, err := OpenReader(dir, testPass) // fails already if f holds metadata
	if err == nil {
		_, err = r.be.readBlock(f, r.sb.Written[f], r.sb.tag(f))
	}
	if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("rollback: got %v", err)
	}
	r = &Reader{be: must(openBackend(dir, testPass))}
	// Swap: another index's authentic file in f's place fails authentication (AAD).
	g := uint32(rep.Files[1])
	other := must(os.ReadFile(filepath.Join(dir, blockName(g))))
	os.WriteFile(filepath.Join(dir, blockName(f)), other, 0o600)
	if _, err := r.be.readBlock(f, 0, 0); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("swap: got %v", err)
	}
}
