package oblivisync

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testKDF is a deliberately cheap argon2id setting for tests only.
var testKDF = KDF{Time: 1, MemoryKiB: 64, Threads: 1}

var testPass = []byte("correct horse battery staple")

func newBackend(t testing.TB, files, size, k int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "backend")
	if err := Init(dir, testPass, Params{Files: files, FileSize: size, K: k, DripTime: 10 * time.Millisecond}, testKDF); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openW(t testing.TB, dir, state string) *Writer {
	t.Helper()
	w, err := OpenWriter(dir, testPass, Options{StateDir: state, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// drain runs epochs until nothing is pending (or fails after max epochs).
func drain(t testing.TB, w *Writer, max int) int {
	t.Helper()
	for i := 1; i <= max; i++ {
		rep, err := w.Sync()
		if err != nil {
			t.Fatal(err)
		}
		if rep.PendingInodes == 0 {
			return i
		}
	}
	t.Fatalf("buffer not drained after %d epochs: %+v", max, w.Stats())
	return 0
}

// snapshot walks an FS in the format of osynctest.Snapshot.
func snapshot(t testing.TB, f FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(ino uint64, path string)
	walk = func(ino uint64, path string) {
		ents, err := f.ReadDir(ino)
		if err != nil {
			t.Fatalf("readdir %s: %v", path, err)
		}
		for _, e := range ents {
			p := strings.TrimPrefix(path+"/"+e.Name, "/")
			a, err := f.GetAttr(e.Ino)
			if err != nil {
				t.Fatalf("getattr %s: %v", p, err)
			}
			switch a.Mode & 0o170000 {
			case 0o040000:
				out[p] = fmt.Sprintf("dir %o", a.Mode&0o777)
				walk(e.Ino, p)
			case 0o120000:
				tg, _ := f.Readlink(e.Ino)
				out[p] = "link " + tg
			default:
				buf := make([]byte, a.Size+10)
				n, err := f.Read(e.Ino, 0, buf)
				if err != nil {
					t.Fatalf("read %s: %v", p, err)
				}
				out[p] = fmt.Sprintf("file %o %d %x", a.Mode&0o777, n, sha256.Sum256(buf[:n]))
			}
		}
	}
	walk(rootIno, "")
	return out
}

// fsTarget drives an FS by path (for osynctest.Workload).
type fsTarget struct{ f FS }

func (t fsTarget) resolve(p string) (uint64, error) {
	ino := uint64(rootIno)
	if p == "" {
		return ino, nil
	}
	for _, c := range strings.Split(p, "/") {
		a, err := t.f.Lookup(ino, c)
		if err != nil {
			return 0, err
		}
		ino = a.Ino
	}
	return ino, nil
}

func (t fsTarget) parent(p string) (uint64, string, error) {
	d, b := filepath.Split(p)
	ino, err := t.resolve(strings.TrimSuffix(d, "/"))
	return ino, b, err
}

func (t fsTarget) Mkdir(p string) error {
	d, b, err := t.parent(p)
	if err == nil {
		_, err = t.f.Mkdir(d, b, 0o755, 0, 0)
	}
	return err
}

func (t fsTarget) WriteAt(p string, off int64, data []byte) error {
	ino, err := t.resolve(p)
	if err != nil {
		d, b, perr := t.parent(p)
		if perr != nil {
			return perr
		}
		a, cerr := t.f.Create(d, b, 0o644, 0, 0)
		if cerr != nil {
			return cerr
		}
		ino = a.Ino
	}
	_, err = t.f.Write(ino, off, data)
	return err
}

func (t fsTarget) Truncate(p string, size int64) error {
	ino, err := t.resolve(p)
	if err == nil {
		s := uint64(size)
		_, err = t.f.SetAttr(ino, SetAttr{Size: &s})
	}
	return err
}

func (t fsTarget) Remove(p string) error {
	d, b, err := t.parent(p)
	if err == nil {
		err = t.f.Unlink(d, b)
	}
	return err
}

func (t fsTarget) Rmdir(p string) error {
	d, b, err := t.parent(p)
	if err == nil {
		err = t.f.Rmdir(d, b)
	}
	return err
}

func (t fsTarget) Rename(a, b string) error {
	d1, n1, err := t.parent(a)
	if err != nil {
		return err
	}
	d2, n2, err := t.parent(b)
	if err != nil {
		return err
	}
	return t.f.Rename(d1, n1, d2, n2, false)
}

func (t fsTarget) Symlink(target, p string) error {
	d, b, err := t.parent(p)
	if err == nil {
		_, err = t.f.Symlink(d, b, target, 0, 0)
	}
	return err
}

func (t fsTarget) Chmod(p string, m fs.FileMode) error {
	ino, err := t.resolve(p)
	if err == nil {
		mode := uint32(m.Perm())
		_, err = t.f.SetAttr(ino, SetAttr{Mode: &mode})
	}
	return err
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
