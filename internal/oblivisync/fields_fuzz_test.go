package oblivisync

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// walkTree lists every path of a reader's tree with its type, mode and content hash, or
// the first error met.
func walkTree(f FS) (map[string]string, error) {
	out := map[string]string{}
	var walk func(ino uint64, path string) error
	walk = func(ino uint64, path string) error {
		ents, err := f.ReadDir(ino)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := strings.TrimPrefix(path+"/"+e.Name, "/")
			a, err := f.GetAttr(e.Ino)
			if err != nil {
				return err
			}
			switch a.Mode & 0o170000 {
			case 0o040000:
				out[p] = fmt.Sprintf("dir %o", a.Mode)
				if err := walk(e.Ino, p); err != nil {
					return err
				}
			case 0o120000:
				tg, err := f.Readlink(e.Ino)
				if err != nil {
					return err
				}
				out[p] = "link " + tg
			default:
				buf := make([]byte, a.Size)
				n, err := f.Read(e.Ino, 0, buf)
				if err != nil {
					return err
				}
				out[p] = fmt.Sprintf("file %o %d %d %x", a.Mode, a.Size, n, sha256.Sum256(buf[:n]))
			}
		}
		return nil
	}
	return out, walk(rootIno, "")
}

// FuzzTamperBackend alters one byte of one file the cloud holds (superblock or backend
// file) and opens a fresh reader: it must show exactly the original tree or fail with an
// integrity or format error, never anything else. (osync.key is covered field by field by
// TestFieldsKeyFile and by sealedkey's FuzzOpen; its KDF costs make it slow to fuzz here.)
func FuzzTamperBackend(f *testing.F) {
	var fuzzBackend struct {
		dir   string
		names []string
		want  map[string]string
	}
	{
		dir := filepath.Join(f.TempDir(), "backend")
		if err := Init(dir, testPass, Params{Files: 6, FileSize: 4096, K: 3, DripTime: 10e6}, testKDF); err != nil {
			panic(err)
		}
		w, err := OpenWriter(dir, testPass, Options{StateDir: f.TempDir(), UnsafeNoFsync: true})
		if err != nil {
			panic(err)
		}
		d := must(w.Mkdir(rootIno, "docs", 0o755, 0, 0))
		a := must(w.Create(d.Ino, "a.txt", 0o600, 0, 0))
		must(w.Write(a.Ino, 0, []byte(strings.Repeat("attack at dawn ", 200))))
		must(w.Symlink(rootIno, "link", "docs/a.txt", 0, 0))
		for i := 0; i < 200; i++ {
			rep, err := w.Sync()
			if err != nil {
				panic(err)
			}
			if rep.PendingInodes == 0 {
				break
			}
		}
		w.Close()
		r, err := OpenReader(dir, testPass)
		if err != nil {
			panic(err)
		}
		want, err := walkTree(r)
		if err != nil || len(want) != 3 {
			panic(fmt.Sprint("fuzz backend: ", want, err))
		}
		fuzzBackend.dir, fuzzBackend.want = dir, want
		fuzzBackend.names = []string{superName}
		for i := uint32(0); i < 6; i++ {
			fuzzBackend.names = append(fuzzBackend.names, blockName(i))
		}
	}
	for _, s := range []struct {
		which uint8
		off   uint32
		x     byte
	}{{0, 0, 1}, {0, 30, 0x80}, {1, 0, 1}, {1, 100, 4}, {2, 4000, 1}, {3, 25, 0xff}, {6, 4095, 1}} {
		f.Add(s.which, s.off, s.x)
	}
	f.Fuzz(func(t *testing.T, which uint8, off uint32, x byte) {
		if x == 0 {
			return
		}
		src := fuzzBackend.dir
		dir := filepath.Join(t.TempDir(), "b")
		os.MkdirAll(dir, 0o700)
		for _, n := range append([]string{keyFileName}, fuzzBackend.names...) {
			os.WriteFile(filepath.Join(dir, n), must(os.ReadFile(filepath.Join(src, n))), 0o600)
		}
		name := fuzzBackend.names[int(which)%len(fuzzBackend.names)]
		p := filepath.Join(dir, name)
		b := must(os.ReadFile(p))
		b[int(off)%len(b)] ^= x
		os.WriteFile(p, b, 0o600)
		r, err := OpenReader(dir, testPass)
		var got map[string]string
		if err == nil {
			got, err = walkTree(r)
		}
		if err != nil {
			if !errors.Is(err, ErrIntegrity) && !errors.Is(err, ErrFormat) {
				t.Fatalf("%s byte %d ^ %#x: error of another kind: %v", name, int(off)%len(b), x, err)
			}
			return
		}
		if fmt.Sprint(got) != fmt.Sprint(fuzzBackend.want) {
			t.Fatalf("%s byte %d ^ %#x: tree changed without an error:\n got %v\nwant %v", name, int(off)%len(b), x, got, fuzzBackend.want)
		}
	})
}
