package oblivisync

import (
	"path/filepath"
	"testing"
	"time"
)

// What the `seen` record costs: one small atomic, fsynced write per epoch, next to the
// epoch itself (k backend files and the superblock, each fsynced). docs/benchmarks.md.
func benchWriter(b *testing.B) *Writer {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "backend")
	if err := Init(dir, testPass, Params{Files: 64, FileSize: 64 << 10, K: 3, DripTime: time.Second}, testKDF); err != nil {
		b.Fatal(err)
	}
	w, err := OpenWriter(dir, testPass, Options{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	return w
}

func BenchmarkIdleEpochFsync(b *testing.B) {
	w := benchWriter(b)
	b.ResetTimer()
	for range b.N {
		if _, err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteSeenFsync(b *testing.B) {
	w := benchWriter(b)
	nonce := w.be.superNonce
	b.ResetTimer()
	for i := range b.N {
		if err := w.writeSeen(uint64(i), nonce); err != nil {
			b.Fatal(err)
		}
	}
}
