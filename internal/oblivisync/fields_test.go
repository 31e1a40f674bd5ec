package oblivisync

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Field-by-field audit of what the cloud holds (docs/security.md, "ObliviSync and the key server: every field"): each
// test alters one field of one backend object, as a malicious cloud folder can, and
// expects the stated outcome.

// copyBackend copies a backend directory so each alteration starts from the same bytes.
func copyBackend(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "backend")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	ents := must(os.ReadDir(src))
	for _, e := range ents {
		b := must(os.ReadFile(filepath.Join(src, e.Name())))
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func alterFile(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	if err := os.WriteFile(path, f(must(os.ReadFile(path))), 0o600); err != nil {
		t.Fatal(err)
	}
}

// openAndRead opens a fresh reader and reads the whole file ino.
func openAndRead(dir string, ino uint64, n int) ([]byte, error) {
	r, err := OpenReader(dir, testPass)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	got, err := r.Read(ino, 0, buf)
	return buf[:got], err
}

func wantErr(t *testing.T, err, class error, text string) {
	t.Helper()
	if !errors.Is(err, class) || !strings.Contains(err.Error(), text) {
		t.Fatalf("got %v, want %v naming %q", err, class, text)
	}
}

func put32(off int, v uint32) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b }
}

func xorAt(off int) func([]byte) []byte {
	return func(b []byte) []byte { b[off] ^= 0x01; return b }
}

// Key file (osync.key): offsets per docs/formats/oblivisync.md.
func TestFieldsKeyFile(t *testing.T) {
	src, _, _ := syncedBackend(t)
	cases := []struct {
		name  string
		alter func([]byte) []byte
		class error
		text  string
	}{
		{"length", func(b []byte) []byte { return b[:len(b)-1] }, ErrFormat, "key file is 133 bytes"},
		{"magic", xorAt(0), ErrFormat, "bad magic"},
		{"version", func(b []byte) []byte { b[4] = 2; return b }, ErrFormat, "key file version 2"},
		{"kdf time in range", put32(5, 2), ErrWrongPassphrase, "wrong passphrase"},
		{"kdf time out of range", put32(5, 65), ErrFormat, "out-of-range argon2id"},
		{"kdf memory in range", put32(9, 128), ErrWrongPassphrase, "wrong passphrase"},
		{"kdf memory above the cap", put32(9, 2<<20), ErrFormat, "out-of-range argon2id"},
		{"kdf lanes in range", func(b []byte) []byte { b[13] = 2; return b }, ErrWrongPassphrase, "wrong passphrase"},
		{"kdf lanes zero", func(b []byte) []byte { b[13] = 0; return b }, ErrFormat, "out-of-range argon2id"},
		{"salt", xorAt(14), ErrWrongPassphrase, "wrong passphrase"},
		{"backend id", xorAt(30), ErrWrongPassphrase, "wrong passphrase"},
		{"N in range", put32(46, 9), ErrWrongPassphrase, "wrong passphrase"},
		{"N out of range", put32(46, 1), ErrInvalid, "files must be between"},
		{"B in range", put32(50, 16<<10+1), ErrWrongPassphrase, "wrong passphrase"},
		{"B out of range", put32(50, 100), ErrInvalid, "file size must be between"},
		{"k in range", put32(54, 3), ErrWrongPassphrase, "wrong passphrase"},
		{"k out of range", put32(54, 17), ErrInvalid, "drip rate k"},
		{"t in range", put32(58, 11), ErrWrongPassphrase, "wrong passphrase"},
		{"t out of range", put32(58, 0), ErrInvalid, "drip time"},
		{"nonce", xorAt(62), ErrWrongPassphrase, "wrong passphrase"},
		{"sealed master key", xorAt(90), ErrWrongPassphrase, "wrong passphrase"},
		{"tag", xorAt(keyFileLen - 1), ErrWrongPassphrase, "wrong passphrase"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyBackend(t, src)
			alterFile(t, filepath.Join(dir, keyFileName), c.alter)
			_, err := OpenReader(dir, testPass)
			wantErr(t, err, c.class, c.text)
			_, err = OpenWriter(dir, testPass, Options{StateDir: t.TempDir(), UnsafeNoFsync: true})
			wantErr(t, err, c.class, c.text)
		})
	}
}

// The key file of another backend (same passphrase) in this one's place: it opens, but its
// master key and backend id authenticate none of these files.
func TestFieldsKeyFileFromAnotherBackend(t *testing.T) {
	src, _, _ := syncedBackend(t)
	other := newBackend(t, 16, 16<<10, 4)
	dir := copyBackend(t, src)
	os.WriteFile(filepath.Join(dir, keyFileName), must(os.ReadFile(filepath.Join(other, keyFileName))), 0o600)
	_, err := OpenReader(dir, testPass)
	wantErr(t, err, ErrIntegrity, "superblock: integrity check failed: backend file failed authentication")
}

// Superblock (super): the container's version byte, nonce and tag, every plaintext field
// (inside the AEAD), and the AAD's kind, index and backend id (files moved or swapped).
func TestFieldsSuperblock(t *testing.T) {
	src, _, _ := syncedBackend(t)
	const N = 16
	pt := func(off int) int { return containerHdr + off } // ciphertext byte over plaintext offset
	cases := []struct {
		name  string
		alter func([]byte) []byte
		text  string
	}{
		{"length", func(b []byte) []byte { return b[:len(b)-1] }, "backend file is 16383 bytes, want 16384"},
		{"container version", func(b []byte) []byte { b[0] = 2; return b }, "backend file version 2, want 1"},
		{"nonce", xorAt(1), "failed authentication"},
		{"epoch", xorAt(pt(7)), "failed authentication"},
		{"next ino", xorAt(pt(15)), "failed authentication"},
		{"N", xorAt(pt(19)), "failed authentication"},
		{"written", xorAt(pt(20 + 7)), "failed authentication"},
		{"pages count", xorAt(pt(20 + 8*N + 3)), "failed authentication"},
		{"page entry", xorAt(pt(24 + 8*N + 3)), "failed authentication"},
		{"page fragment ref", xorAt(pt(24 + 8*N + 12 + 3)), "failed authentication"},
		{"zero padding", xorAt(pt(newGeometry(16<<10).plain - 1)), "failed authentication"},
		{"tag", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "failed authentication"},
		{"all zeros", func(b []byte) []byte { return make([]byte, len(b)) }, "backend file version 0, want 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyBackend(t, src)
			alterFile(t, filepath.Join(dir, superName), c.alter)
			_, err := OpenReader(dir, testPass)
			wantErr(t, err, ErrIntegrity, c.text)
			if !strings.Contains(err.Error(), "superblock") {
				t.Fatalf("error does not name the superblock: %v", err)
			}
			_, err = OpenWriter(dir, testPass, Options{StateDir: t.TempDir(), UnsafeNoFsync: true})
			wantErr(t, err, ErrIntegrity, c.text)
		})
	}
	// AAD: kind and index. A backend file in the superblock's place and the superblock in
	// a backend file's place both fail authentication.
	t.Run("kind (file as superblock)", func(t *testing.T) {
		dir := copyBackend(t, src)
		r := must(OpenReader(dir, testPass))
		var f uint32
		for i, e := range r.sb.Written {
			if e > 0 {
				f = uint32(i)
			}
		}
		os.WriteFile(filepath.Join(dir, superName), must(os.ReadFile(filepath.Join(dir, blockName(f)))), 0o600)
		_, err := OpenReader(dir, testPass)
		wantErr(t, err, ErrIntegrity, "failed authentication")
	})
	t.Run("backend id (superblock of another backend)", func(t *testing.T) {
		dir := copyBackend(t, src)
		other := newBackend(t, 16, 16<<10, 4)
		os.WriteFile(filepath.Join(dir, superName), must(os.ReadFile(filepath.Join(other, superName))), 0o600)
		_, err := OpenReader(dir, testPass)
		wantErr(t, err, ErrIntegrity, "failed authentication")
	})
}

// An older, authentic superblock: a running reader refuses it and keeps its epoch; a
// fresh reader (no memory) shows that older state: not prevented (documented); the
// writer refuses it (TestWriterRefusesRolledBackSuperblockAfterIdleEpochs).
func TestFieldsSuperblockReplay(t *testing.T) {
	dir := newBackend(t, 8, 16<<10, 2)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	f := must(w.Create(rootIno, "a", 0o600, 0, 0))
	must(w.Write(f.Ino, 0, []byte("version 1")))
	drain(t, w, 50)
	old := must(os.ReadFile(filepath.Join(dir, superName)))
	r := must(OpenReader(dir, testPass))
	oldEpoch := r.Epoch()
	must(w.Write(f.Ino, 0, []byte("version 2")))
	drain(t, w, 50)
	if err := r.Refresh(); err != nil || r.Epoch() <= oldEpoch {
		t.Fatalf("refresh: %v at epoch %d", err, r.Epoch())
	}
	newEpoch := r.Epoch()
	os.WriteFile(filepath.Join(dir, superName), old, 0o600)
	err := r.Refresh()
	wantErr(t, err, ErrIntegrity, "went back")
	if r.Epoch() != newEpoch {
		t.Fatalf("running reader moved to epoch %d after a refused rollback, want %d", r.Epoch(), newEpoch)
	}
	fresh := must(OpenReader(dir, testPass))
	if fresh.Epoch() != oldEpoch {
		t.Fatalf("fresh reader at epoch %d, want the replayed %d", fresh.Epoch(), oldEpoch)
	}
}

// Backend files (b*): container fields, every plaintext field (epoch, index, fragment
// header, payload, padding) inside the AEAD, the AAD's index (swap), an older authentic
// version (rollback), and zeros.
func TestFieldsBackendFile(t *testing.T) {
	src, ino, data := syncedBackend(t)
	r := must(OpenReader(src, testPass))
	fr := r.t.get(ino).Frags[0]
	g := r.be.g
	file := filepath.Join("", blockName(fr.File))
	frag := g.sideStart(fr.Side) + int(fr.Off) // fragment header offset in the plaintext
	pt := func(off int) int { return containerHdr + off }
	var unused uint32 = holeFile
	for i, e := range r.sb.Written {
		if e == 0 {
			unused = uint32(i)
		}
	}
	cases := []struct {
		name  string
		alter func([]byte) []byte
		text  string
	}{
		{"length", func(b []byte) []byte { return append(b, 0) }, "backend file is 16385 bytes, want 16384"},
		{"container version", func(b []byte) []byte { b[0] = 0; return b }, "backend file version 0, want 1"},
		{"nonce", xorAt(24), "failed authentication"},
		{"epoch", xorAt(pt(7)), "failed authentication"},
		{"index", xorAt(pt(11)), "failed authentication"},
		{"fragment object", xorAt(pt(frag + 7)), "failed authentication"},
		{"fragment index", xorAt(pt(frag + 11)), "failed authentication"},
		{"fragment length", xorAt(pt(frag + 15)), "failed authentication"},
		{"fragment payload", xorAt(pt(frag + fragHdr + 5)), "failed authentication"},
		{"zero padding", xorAt(pt(g.plain - 1)), "failed authentication"},
		{"tag", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "failed authentication"},
		{"all zeros (written file)", func(b []byte) []byte { return make([]byte, len(b)) }, "backend file version 0, want 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyBackend(t, src)
			alterFile(t, filepath.Join(dir, file), c.alter)
			got, err := openAndRead(dir, ino, len(data))
			wantErr(t, err, ErrIntegrity, c.text)
			if !strings.Contains(err.Error(), blockName(fr.File)) {
				t.Fatalf("error does not name %s: %v", blockName(fr.File), err)
			}
			if len(got) != 0 {
				t.Fatalf("%d bytes released from a tampered file", len(got))
			}
		})
	}
	t.Run("index (file swapped into another position)", func(t *testing.T) {
		dir := copyBackend(t, src)
		var other uint32
		for i, e := range r.sb.Written {
			if e > 0 && uint32(i) != fr.File {
				other = uint32(i)
			}
		}
		os.WriteFile(filepath.Join(dir, file), must(os.ReadFile(filepath.Join(dir, blockName(other)))), 0o600)
		_, err := openAndRead(dir, ino, len(data))
		wantErr(t, err, ErrIntegrity, "failed authentication")
	})
	t.Run("zeros in a never-written file (harmless)", func(t *testing.T) {
		if unused == holeFile {
			t.Skip("every backend file was written")
		}
		dir := copyBackend(t, src)
		alterFile(t, filepath.Join(dir, blockName(unused)), func(b []byte) []byte { return make([]byte, len(b)) })
		got, err := openAndRead(dir, ino, len(data))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, %v; want the file unchanged", len(got), err)
		}
	})
}

// An older authentic version of a backend file (the cloud rolls one file back) is refused
// by its epoch; a running reader waits for files in transit, then reports the rollback.
func TestFieldsBackendFileEpochReplay(t *testing.T) {
	dir := newBackend(t, 4, 16<<10, 4) // k = N: every epoch rewrites every file
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	f := must(w.Create(rootIno, "a", 0o600, 0, 0))
	must(w.Write(f.Ino, 0, []byte("version 1")))
	drain(t, w, 50)
	olds := map[string][]byte{}
	for i := uint32(0); i < 4; i++ {
		olds[blockName(i)] = must(os.ReadFile(filepath.Join(dir, blockName(i))))
	}
	must(w.Sync())
	for name, b := range olds {
		os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	_, err := OpenReader(dir, testPass)
	wantErr(t, err, ErrIntegrity, "rolled back")
}

// Metadata pages live in fragments inside backend files: a flipped byte of a page
// fragment fails the backend file's authentication when the reader loads the tree.
func TestFieldsMetadataPage(t *testing.T) {
	src, _, _ := syncedBackend(t)
	r := must(OpenReader(src, testPass))
	pl, ok := r.sb.Pages[0]
	if !ok {
		t.Fatal("no metadata page 0")
	}
	fr := pl.Frags[0]
	at := containerHdr + r.be.g.sideStart(fr.Side) + int(fr.Off) + fragHdr
	for name, off := range map[string]int{"page version": 0, "page number": 4, "record count": 8, "inode record": 9 + 20} {
		t.Run(name, func(t *testing.T) {
			dir := copyBackend(t, src)
			alterFile(t, filepath.Join(dir, blockName(fr.File)), xorAt(at+off))
			_, err := OpenReader(dir, testPass)
			wantErr(t, err, ErrIntegrity, "failed authentication")
			if !strings.Contains(err.Error(), "metadata page 0") {
				t.Fatalf("error does not name the page: %v", err)
			}
		})
	}
}

// The writer's state (journal, checkpoint, seen, status.json) never lies in the synced
// folder: the cloud cannot touch it.
func TestFieldsStateDirNotInCloud(t *testing.T) {
	dir := newBackend(t, 4, 16<<10, 2)
	_, err := OpenWriter(dir, testPass, Options{StateDir: filepath.Join(dir, "state"), UnsafeNoFsync: true})
	wantErr(t, err, ErrInvalid, "inside the synced backend folder")
}

// The cloud keeps every version of osync.key: after `osync passwd` it can put the old one
// back. It opens only with the old passphrase and holds the same master key, so it adds
// nothing unless the old passphrase leaked (documented: passwd does not protect a backend
// whose old key file and old passphrase are both known).
func TestFieldsKeyFileReplayAfterPasswd(t *testing.T) {
	dir, ino, data := syncedBackend(t)
	old := must(os.ReadFile(filepath.Join(dir, keyFileName)))
	newPass := []byte("a new passphrase")
	if err := ChangePassphrase(dir, testPass, newPass); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, keyFileName), old, 0o600)
	if _, err := OpenReader(dir, newPass); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("new passphrase on the replayed key file: got %v", err)
	}
	got, err := openAndRead(dir, ino, len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("old passphrase on the replayed key file: %v", err)
	}
}
