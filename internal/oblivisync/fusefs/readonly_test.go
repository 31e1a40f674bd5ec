package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// version i of a test file: every byte is mark(i) (never 0, so zero padding shows),
// length size(i).
func mark(i int) byte      { return byte(i%250 + 1) }
func size(i int) int       { return 90<<10 + i*1000 }
func version(i int) []byte { return bytes.Repeat([]byte{mark(i)}, size(i)) }

// readOnce opens path and reads it with ONE read(2) into a buffer larger than any version.
func readOnce(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, 1<<20)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// homogeneous checks one read returned a single version: all bytes the same non-zero mark
// and, if exact, that version's full length.
func homogeneous(b []byte, exact bool) error {
	if len(b) == 0 {
		return nil
	}
	m := b[0]
	if m == 0 {
		return fmt.Errorf("read starts with zeros (%d bytes)", len(b))
	}
	if i := bytes.IndexFunc(b, func(r rune) bool { return byte(r) != m }); i >= 0 {
		return fmt.Errorf("one read mixes versions: byte %d is %#x after %#x (length %d)", i, b[i], m, len(b))
	}
	if exact && len(b) != size(int(m)-1) {
		return fmt.Errorf("version %d read as %d bytes, want %d", m-1, len(b), size(int(m)-1))
	}
	return nil
}

// Issue 17 item 1: a writer replaces file.bin editor-style (temp file, rename over) and
// rewrites inplace.bin (O_TRUNC, then 64 KiB writes) while two goroutines read both
// through a read-only mount. Every open must succeed (the name is always listed), every
// single read(2) must return one version, and a descriptor opened before a new version
// arrived must keep reading the version it opened.
func TestReadOnlyMountNeverTears(t *testing.T) {
	be := newBackend(t, 64, 32<<10, 4)
	mnt, ro := mkdir(t, "rw"), mkdir(t, "ro")
	startMount(t, be, mnt, mkdir(t, "state"), false)
	os.WriteFile(filepath.Join(mnt, "file.bin"), version(0), 0o644)
	os.WriteFile(filepath.Join(mnt, "inplace.bin"), version(0), 0o644)
	startMount(t, be, ro, mkdir(t, "ro-state"), true)
	testutil.WaitFor(t, 30*time.Second, "first versions visible", func() bool {
		a, errA := os.Stat(filepath.Join(ro, "file.bin"))
		b, errB := os.Stat(filepath.Join(ro, "inplace.bin"))
		return errA == nil && errB == nil && a.Size() == int64(size(0)) && b.Size() == int64(size(0))
	})

	var stop atomic.Bool
	var reads atomic.Int64
	errs := make(chan error, 100)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				for _, f := range []struct {
					name  string
					exact bool
				}{{"file.bin", true}, {"inplace.bin", false}} {
					b, err := readOnce(filepath.Join(ro, f.name))
					if err == nil {
						err = homogeneous(b, f.exact)
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %w", f.name, err)
						return
					}
					reads.Add(1)
				}
			}
		}()
	}

	const versions = 12
	for i := 1; i <= versions; i++ {
		// A descriptor opened now must read this version to the end, whatever comes next.
		held, err := os.Open(filepath.Join(ro, "file.bin"))
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 10<<10)
		if _, err := held.ReadAt(head, 0); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(mnt, ".file.bin.tmp")
		if err := os.WriteFile(tmp, version(i), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(mnt, "file.bin")); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(mnt, "inplace.bin"), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		v := version(i)
		for off := 0; off < len(v); off += 64 << 10 {
			f.Write(v[off:min(len(v), off+64<<10)])
		}
		f.Close()
		testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("version %d visible", i), func() bool {
			a, errA := os.Stat(filepath.Join(ro, "file.bin"))
			b, errB := os.Stat(filepath.Join(ro, "inplace.bin"))
			return errA == nil && errB == nil && a.Size() == int64(size(i)) && b.Size() == int64(size(i))
		})
		rest := make([]byte, size(i-1)+4096)
		n, _ := held.ReadAt(rest, int64(len(head)))
		held.Close()
		if err := homogeneous(append(head, rest[:n]...), true); err != nil || head[0] != mark(i-1) {
			t.Fatalf("descriptor opened at version %d, read after version %d arrived: %v (mark %#x)", i-1, i, err, head[0])
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d reads through the read-only mount, %d versions", reads.Load(), versions)
}
