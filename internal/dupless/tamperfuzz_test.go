package dupless

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage/local"
)

// FuzzTamperGet plays a storage service that alters one stored object (a chunk, a key
// record, the tree root or the key check): one byte XORed, or the object truncated. get must
// return every file either exactly as stored or not at all, with an error saying why;
// never other bytes.
func FuzzTamperGet(f *testing.F) {
	be, err := local.New(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	c, err := New(be, bytes.Repeat([]byte{3}, MasterKeySize), Options{Keys: mle.LocalKeys{}, Jobs: 2})
	if err != nil {
		f.Fatal(err)
	}
	src := f.TempDir()
	want := map[string][]byte{
		"dir/random":   randBytes(3000, 1),
		"dir/text":     bytes.Repeat([]byte("compressible text, "), 400),
		"top":          []byte("small"),
		"dir/sub/more": randBytes(9000, 2),
	}
	for p, b := range want {
		os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(src, p), b, 0o644)
	}
	if _, err := c.Put(ctx, []string{src + "/dir", src + "/top"}, ""); err != nil {
		f.Fatal(err)
	}
	var objects []string
	filepath.WalkDir(be.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !bytes.Contains([]byte(p), []byte("/.veil/locks/")) {
			objects = append(objects, p)
		}
		return nil
	})
	sort.Strings(objects)
	for i := range objects {
		f.Add(uint8(i), uint32(1), uint8(1), false)
		f.Add(uint8(i), uint32(0), uint8(0x01), false) // version / suite byte
		f.Add(uint8(i), uint32(1), uint8(0x01), true)
	}
	f.Fuzz(func(t *testing.T, which uint8, off uint32, x uint8, truncate bool) {
		path := objects[int(which)%len(objects)]
		orig, err := os.ReadFile(path)
		if err != nil || len(orig) == 0 {
			t.Skip()
		}
		bad := bytes.Clone(orig)
		at := int(off) % len(bad)
		if truncate {
			bad = bad[:at]
		} else {
			if x == 0 {
				x = 1
			}
			bad[at] ^= x
		}
		os.WriteFile(path, bad, 0o644)
		defer os.WriteFile(path, orig, 0o644)
		out := t.TempDir()
		c2, _ := New(be, bytes.Repeat([]byte{3}, MasterKeySize), Options{Keys: mle.LocalKeys{}, Jobs: 2, Roots: c.mem})
		defer c2.Close()
		sum, err := c2.Get(ctx, "", out)
		if err != nil && !isIntegrityError(err) {
			t.Fatalf("%s altered at %d: get: %v (not an integrity error)", path, at, err)
		}
		failed := map[string]bool{}
		if sum != nil {
			for _, e := range sum.Errors {
				failed[e.Path] = true
			}
		}
		for p, b := range want {
			got, rerr := os.ReadFile(filepath.Join(out, p))
			switch {
			case rerr == nil && !bytes.Equal(got, b):
				t.Fatalf("%s altered at %d: %s came back with other bytes", path, at, p)
			case rerr != nil && err == nil && !failed[p]:
				t.Fatalf("%s altered at %d: %s missing without an error", path, at, p)
			}
		}
	})
}

func isIntegrityError(err error) bool {
	for _, e := range []error{ErrIntegrity, ErrRecord, ErrStale, ErrRollback, ErrForeignKey} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
