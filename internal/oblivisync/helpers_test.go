package oblivisync

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
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

// snapshot walks an FS and returns path -> description (content for files).
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
			p := path + "/" + e.Name
			a, err := f.GetAttr(e.Ino)
			if err != nil {
				t.Fatalf("getattr %s: %v", p, err)
			}
			switch {
			case a.Mode&0o170000 == 0o040000:
				out[p] = fmt.Sprintf("dir %o", a.Mode&0o7777)
				walk(e.Ino, p)
			case a.Mode&0o170000 == 0o120000:
				tg, _ := f.Readlink(e.Ino)
				out[p] = "link " + tg
			default:
				buf := make([]byte, a.Size+10)
				n, err := f.Read(e.Ino, 0, buf)
				if err != nil {
					t.Fatalf("read %s: %v", p, err)
				}
				out[p] = fmt.Sprintf("file %o %d %x", a.Mode&0o7777, a.Size, buf[:n])
			}
		}
	}
	walk(rootIno, "")
	return out
}

func diffSnap(a, b map[string]string) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	for _, k := range keys {
		if a[k] != b[k] {
			x, y := a[k], b[k]
			if len(x) > 60 {
				x = x[:60]
			}
			if len(y) > 60 {
				y = y[:60]
			}
			fmt.Fprintf(&buf, "%s: %q vs %q\n", k, x, y)
		}
	}
	return buf.String()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var _ = errors.Is
var _ = rand.IntN
