package dupless

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage/local"
)

// TestFields alters, one at a time, every field of every object the storage service holds
// for a DupLESS user, and checks the outcome docs/security.md states for it ("Every field
// the servers hold"). Each subtest is one row of that table.
func TestFields(t *testing.T) {
	type env struct {
		be     *local.Backend
		c      *Client
		master []byte
		mem    RootMemory
		root   string
		objs   map[string]string // "chunk", "key", "dir", "link", "keycheck", "treeroot" -> file
	}
	setup := func(t *testing.T) *env {
		be := newBackend(t)
		master, mem := NewMasterKey(), RootFile(filepath.Join(t.TempDir(), "mem.mem"), "")
		c := clientWith(t, be, master, mem)
		src := t.TempDir()
		os.MkdirAll(filepath.Join(src, "d"), 0o750)
		write(t, filepath.Join(src, "d", "a"), randBytes(5000, 1))
		os.Symlink("a", filepath.Join(src, "d", "l"))
		if _, err := c.Put(ctx, []string{filepath.Join(src, "d")}, ""); err != nil {
			t.Fatal(err)
		}
		e := &env{be: be, c: c, master: master, mem: mem, root: be.Root(), objs: map[string]string{}}
		encD, _ := c.keys.encName("d")
		encA, _ := c.keys.encName("a")
		encL, _ := c.keys.encName("l")
		e.objs["key"] = filepath.Join(e.root, encD, encA+keySuffix)
		e.objs["link"] = filepath.Join(e.root, encD, encL+keySuffix)
		e.objs["dir"] = filepath.Join(e.root, encD, dirMetaName)
		e.objs["keycheck"] = filepath.Join(e.root, ".veil", keyCheck)
		e.objs["treeroot"] = filepath.Join(e.root, ".veil", "roots", rootName(1))
		r, err := c.readRecord(ctx, encD, encA+keySuffix)
		if err != nil {
			t.Fatal(err)
		}
		d, n := chunkLocation(r.Chunks[0].Tag)
		e.objs["chunk"] = filepath.Join(e.root, filepath.FromSlash(d), n)
		return e
	}
	alter := func(t *testing.T, path string, f func([]byte) []byte) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	xorAt := func(i int) func([]byte) []byte {
		return func(b []byte) []byte {
			if i < 0 {
				i += len(b)
			}
			b[i] ^= 0x01
			return b
		}
	}
	set := func(i int, v byte) func([]byte) []byte { return func(b []byte) []byte { b[i] = v; return b } }
	// getFails expects a get of everything to fail, for file (or the whole command when file
	// is ""), with an error matching want.
	getFails := func(t *testing.T, e *env, file string, want error) {
		t.Helper()
		c := clientWith(t, e.be, e.master, e.mem) // a later command on the same device
		sum, err := c.Get(ctx, "", t.TempDir())
		if file == "" {
			if !errors.Is(err, want) {
				t.Fatalf("get: %v, want %v", err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		for _, fe := range sum.Errors {
			if fe.Path == file && strings.Contains(fe.Err, want.Error()) {
				return
			}
		}
		t.Fatalf("errors %v, want %q for %s", sum.Errors, want, file)
	}
	rows := []struct {
		name string
		obj  string
		harm func([]byte) []byte
		file string // "" : the whole command fails
		want error
	}{
		{"chunk suite byte (SHA-256 to BLAKE3)", "chunk", set(0, byte(mle.BLAKE3)), "d/a", ErrIntegrity},
		{"chunk suite byte (unknown)", "chunk", set(0, 0x7f), "d/a", ErrIntegrity},
		{"chunk scheme byte (HCE2 to HCE1)", "chunk", set(1, byte(mle.HCE1)), "d/a", ErrIntegrity},
		{"chunk scheme byte (HCE2 to RCE)", "chunk", set(1, byte(mle.RCE)), "d/a", ErrIntegrity},
		{"chunk body", "chunk", xorAt(mle.HeaderSize + 3), "d/a", ErrIntegrity},
		{"chunk trailer H(K)", "chunk", xorAt(-1), "d/a", ErrIntegrity},
		{"chunk truncated", "chunk", func(b []byte) []byte { return b[:len(b)-40] }, "d/a", ErrIntegrity},
		{"key record version byte", "key", set(0, 1), "d/a", ErrRecord},
		{"key record nonce", "key", xorAt(5), "d/a", ErrRecord},
		{"key record ciphertext", "key", xorAt(recordHeader + 2), "d/a", ErrRecord},
		{"key record tag", "key", xorAt(-1), "d/a", ErrRecord},
		{"symlink record", "link", xorAt(recordHeader + 1), "d/l", ErrRecord},
		{"directory record", "dir", xorAt(recordHeader + 1), "d", ErrRecord},
		{"tree root version byte", "treeroot", set(0, 2), "", ErrIntegrity},
		{"tree root nonce", "treeroot", xorAt(3), "", ErrIntegrity},
		{"tree root body", "treeroot", xorAt(-1), "", ErrIntegrity},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			e := setup(t)
			alter(t, e.objs[row.obj], row.harm)
			getFails(t, e, row.file, row.want)
		})
	}
	// The key check tampered with: a command that changes the namespace reads it and
	// refuses; a reading command is vouched for by the newest root, which opens only
	// under this master key (refresh), and reads on.
	t.Run("key check", func(t *testing.T) {
		e := setup(t)
		alter(t, e.objs["keycheck"], xorAt(recordHeader+1))
		c := clientWith(t, e.be, e.master, e.mem)
		if err := c.Mkdir(ctx, "new"); !errors.Is(err, ErrForeignKey) {
			t.Fatalf("mkdir: %v, want %v", err, ErrForeignKey)
		}
		if s, err := clientWith(t, e.be, e.master, e.mem).Get(ctx, "", t.TempDir()); err != nil || s.Err() != nil {
			t.Fatalf("get: %v, %v", err, s.Err())
		}
	})
	t.Run("tree root renamed to the next number", func(t *testing.T) {
		e := setup(t)
		if err := os.Rename(e.objs["treeroot"], filepath.Join(filepath.Dir(e.objs["treeroot"]), rootName(2))); err != nil {
			t.Fatal(err)
		}
		getFails(t, e, "", ErrIntegrity)
	})
	t.Run("encrypted name of a file renamed", func(t *testing.T) {
		e := setup(t)
		encB, _ := e.c.keys.encName("b")
		if err := os.Rename(e.objs["key"], filepath.Join(filepath.Dir(e.objs["key"]), encB+keySuffix)); err != nil {
			t.Fatal(err)
		}
		getFails(t, e, "d/b", ErrRecord) // bound to its path
		getFails(t, e, "d/a", ErrStale)  // and the root misses d/a
	})
	t.Run("planted name that is not an encrypted name", func(t *testing.T) {
		e := setup(t)
		if err := os.WriteFile(filepath.Join(filepath.Dir(e.objs["key"]), "not-a-name.key"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Harmless: skipped as not this user's (with a warning); everything else reads.
		sum, err := e.c.Get(ctx, "", t.TempDir())
		if err != nil || sum.Err() != nil || sum.Files != 1 {
			t.Fatalf("get: %v %v", err, sum.Err())
		}
	})
	t.Run("planted exclusive lock", func(t *testing.T) {
		e := setup(t)
		if err := e.be.Put(ctx, locksDir, "exclusive-1-0000000000000000", bytes.NewReader(nil), 0); err != nil {
			t.Fatal(err)
		}
		// Harmless beyond denial of service: changes are refused with a clear error.
		if _, err := e.c.Put(ctx, []string{t.TempDir()}, ""); !errors.Is(err, ErrLocked) {
			t.Fatalf("put: %v, want ErrLocked", err)
		}
	})
}
