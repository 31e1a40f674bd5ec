package fusemount

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// manySnapshots stores a folder "src" of files files snaps times (file-00000 holding
// "version <i>" in snapshot i, file-<n> "<n>") and returns the backend, counting, the
// master key and the folder.
func manySnapshots(t testing.TB, snaps, files int) (*countingBE, []byte, string) {
	t.Helper()
	l, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	be := &countingBE{Backend: l}
	master := dupless.NewMasterKey()
	c := clientOf(t, be, master)
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	for i := range files {
		os.WriteFile(filepath.Join(src, fmt.Sprintf("file-%05d", i)), []byte(fmt.Sprint(i)), 0o644)
	}
	for s := range snaps {
		os.WriteFile(filepath.Join(src, "file-00000"), []byte(fmt.Sprint("version ", s)), 0o644)
		putTree(t, c, src)
	}
	return be, master, src
}

// clientOf is a client of master on be, closed with the test.
func clientOf(t testing.TB, be storage.Backend, master []byte) *dupless.Client {
	t.Helper()
	c, err := dupless.New(be, master, dupless.Options{Keys: mle.LocalKeys{}, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// BenchmarkMountSnapshots reports what a mount of 40 snapshots of 3,000 files holds:
// after it started (start-MiB, roots-read-at-start, start-ms: until Config.Ready), after 'ls snapshots/' (listed-MiB),
// after 'ls snapshots/<time>/' of every snapshot (opened-MiB, roots-read-opening: their
// listings loaded) and after 'ls snapshots/<time>/src/' of every snapshot (browsed-MiB:
// with the 120,000 entries' nodes the kernel keeps, a Node and record each).
//
//	go test ./internal/dupless/fusemount -run '^$' -bench BenchmarkMountSnapshots -benchtime 1x
func BenchmarkMountSnapshots(b *testing.B) {
	requireFUSE(b)
	const snaps, files = 40, 3000
	be, master, _ := manySnapshots(b, snaps, files)
	b.ResetTimer()
	for range b.N {
		c, err := dupless.New(be, master, dupless.Options{Keys: mle.LocalKeys{}, Jobs: 2})
		if err != nil {
			b.Fatal(err)
		}
		base := heapInUse()
		be.rootGets.Store(0)
		t0 := time.Now()
		m := runMount(b, c, func(*Config) {})
		took := time.Since(t0)
		started, reads := heapInUse()-base, be.rootGets.Load()
		es, err := os.ReadDir(filepath.Join(m.dir, "snapshots"))
		if err != nil || len(es) != snaps {
			b.Fatalf("snapshots/: %d entries, %v", len(es), err)
		}
		listed := heapInUse() - base
		be.rootGets.Store(0)
		for _, e := range es {
			if fs, err := os.ReadDir(filepath.Join(m.dir, "snapshots", e.Name())); err != nil || len(fs) != 1 {
				b.Fatalf("snapshots/%s: %d entries, %v", e.Name(), len(fs), err)
			}
		}
		opened, openReads := heapInUse()-base, be.rootGets.Load()
		for _, e := range es {
			if fs, err := os.ReadDir(filepath.Join(m.dir, "snapshots", e.Name(), "src")); err != nil || len(fs) != files {
				b.Fatalf("snapshots/%s/src: %d entries, %v", e.Name(), len(fs), err)
			}
		}
		browsed := heapInUse() - base
		b.ReportMetric(float64(took.Milliseconds()), "start-ms")
		b.ReportMetric(float64(started)/(1<<20), "start-MiB")
		b.ReportMetric(float64(reads), "roots-read-at-start")
		b.ReportMetric(float64(listed)/(1<<20), "listed-MiB")
		b.ReportMetric(float64(opened)/(1<<20), "opened-MiB")
		b.ReportMetric(float64(openReads), "roots-read-opening")
		b.ReportMetric(float64(browsed)/(1<<20), "browsed-MiB")
		m.stop()
		<-m.done
		c.Close()
	}
}
