package dupless

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// Every way a storage service can lie is caught at get, names the file, writes nothing
// at the destination, and leaves the other files readable.
func TestTamperDetected(t *testing.T) {
	cases := []struct {
		name string
		harm func(t *testing.T, root string, objs map[string]string)
		want error
	}{
		{"flipped bit in a chunk", func(t *testing.T, root string, o map[string]string) {
			flip(t, o["chunk:a"], 40)
		}, ErrIntegrity},
		{"truncated chunk", func(t *testing.T, root string, o map[string]string) {
			os.Truncate(o["chunk:a"], 10)
		}, ErrIntegrity},
		{"chunk swapped for another file's", func(t *testing.T, root string, o map[string]string) {
			b, _ := os.ReadFile(o["chunk:b"])
			os.WriteFile(o["chunk:a"], b, 0o644)
		}, ErrIntegrity},
		{"flipped bit in a key record", func(t *testing.T, root string, o map[string]string) {
			flip(t, o["key:a"], 30)
		}, ErrRecord},
		{"key records swapped between names", func(t *testing.T, root string, o map[string]string) {
			a, _ := os.ReadFile(o["key:a"])
			b, _ := os.ReadFile(o["key:b"])
			os.WriteFile(o["key:a"], b, 0o644)
			os.WriteFile(o["key:b"], a, 0o644)
		}, ErrRecord},
		{"truncated key record", func(t *testing.T, root string, o map[string]string) {
			os.Truncate(o["key:a"], 20)
		}, ErrRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			be := newBackend(t)
			c := newClient(t, be, mle.LocalKeys{})
			dir := t.TempDir()
			write(t, filepath.Join(dir, "a"), randBytes(5000, 1))
			write(t, filepath.Join(dir, "b"), randBytes(6000, 2))
			write(t, filepath.Join(dir, "c"), []byte("untouched"))
			if _, err := c.Put(ctx, []string{dir + "/a", dir + "/b", dir + "/c"}, ""); err != nil {
				t.Fatal(err)
			}
			tc.harm(t, be.Root(), objects(t, c, be.Root()))
			out := t.TempDir()
			sum, err := c.Get(ctx, "", out)
			if err != nil {
				t.Fatal(err)
			}
			sum.Err() // sorts the errors by path
			var failed []string
			for _, e := range sum.Errors {
				failed = append(failed, e.Path)
				if !strings.Contains(e.Err, tc.want.Error()) {
					t.Errorf("%s: error %q does not say %q", e.Path, e.Err, tc.want)
				}
			}
			if len(failed) == 0 || failed[0] != "a" {
				t.Fatalf("failed files = %v, want a first", failed)
			}
			if _, err := os.Stat(filepath.Join(out, "a")); !errors.Is(err, fs.ErrNotExist) {
				t.Error("a tampered file reached its destination")
			}
			if b, _ := os.ReadFile(filepath.Join(out, "c")); string(b) != "untouched" {
				t.Error("an untouched file did not come back")
			}
			leftovers, _ := filepath.Glob(filepath.Join(out, ".veil-get-*"))
			if len(leftovers) != 0 {
				t.Errorf("temporary files left behind: %v", leftovers)
			}
		})
	}
}

// objects maps "key:<name>" and "chunk:<name>" to the files holding them in a local backend.
func objects(t *testing.T, c *Client, root string) map[string]string {
	m := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		enc, _ := c.keys.encName(n)
		m["key:"+n] = filepath.Join(root, enc+keySuffix)
		r, err := c.readRecord(ctx, "", enc+keySuffix)
		if err != nil {
			t.Fatal(err)
		}
		d, name := chunkLocation(r.Chunks[0].Tag)
		m["chunk:"+n] = filepath.Join(root, filepath.FromSlash(d), name)
	}
	return m
}

func flip(t *testing.T, path string, at int) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) <= at {
		t.Fatalf("flip %s: %v (%d bytes)", path, err, len(b))
	}
	b[at] ^= 1
	os.WriteFile(path, b, 0o644)
}

func TestKeyFile(t *testing.T) {
	TestOnlyUseLowCostKDF()
	master := NewMasterKey()
	kf, err := SealKeyFile(master, []byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenKeyFile(kf, []byte("correct horse"))
	if err != nil || string(got) != string(master) {
		t.Fatalf("open: %v", err)
	}
	if _, err := OpenKeyFile(kf, []byte("wrong horse")); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	bad := append([]byte(nil), kf...)
	bad[17] = 3 // threads 1 -> 3: in range, so only header authentication can catch it
	if _, err := OpenKeyFile(bad, []byte("correct horse")); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("tampered KDF parameters: %v", err)
	}
	huge := append([]byte(nil), kf...)
	huge[13], huge[14] = 0xff, 0xff // memory far beyond the limit: refused before any work
	if _, err := OpenKeyFile(huge, []byte("x")); err == nil || !strings.Contains(err.Error(), "out-of-range") {
		t.Fatalf("hostile KDF parameters: %v", err)
	}
	if _, err := OpenKeyFile([]byte("nope"), nil); err == nil {
		t.Fatal("garbage accepted as a key file")
	}
	if _, err := SealKeyFile(master, nil); err == nil {
		t.Fatal("empty passphrase accepted")
	}
}

func TestNameLimits(t *testing.T) {
	k, _ := deriveUserKeys(NewMasterKey())
	ok := strings.Repeat("é", MaxNameLen/2) // multi-byte: the limit is in bytes
	enc, err := k.encName(ok)
	if err != nil || len(enc)+len(ctxtSuffix) > 255 {
		t.Fatalf("name of %d bytes: %v, %d chars", len(ok), err, len(enc))
	}
	if dec, _ := k.decName(enc); dec != ok {
		t.Fatal("name round trip")
	}
	for _, n := range []int{MaxNameLen + 1, MaxLongNameLen} { // stored under a tag
		enc, err := k.encName(strings.Repeat("n", n))
		if err != nil || !isLongTag(enc) || len(enc)+len(keySuffix) > 255 {
			t.Fatalf("name of %d bytes: %q %v", n, enc, err)
		}
	}
	if _, err := k.encName(strings.Repeat("n", MaxLongNameLen+1)); !errors.Is(err, ErrNameTooLong) {
		t.Fatalf("too long: %v", err)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "nul\x00"} {
		if _, err := k.encName(bad); err == nil {
			t.Errorf("invalid name %q accepted", bad)
		}
	}
	other, _ := deriveUserKeys(NewMasterKey())
	if _, err := other.decName(enc); err == nil {
		t.Fatal("another user's key decrypted a name")
	}
}
