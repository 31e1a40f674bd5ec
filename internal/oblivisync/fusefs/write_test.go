package fusefs

import (
	"log/slog"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/veil-project/veil/internal/oblivisync"
)

// TestWritePartlyAppliedIsShortWrite: a FUSE write is split into journal records of
// 256 KiB; when a later part fails (the pending buffer filled up) the earlier parts are
// already in the file. The kernel must then get the short count, not an error for a
// write that in fact changed the file.
func TestWritePartlyAppliedIsShortWrite(t *testing.T) {
	be := newBackend(t, 64, 64<<10, 2)
	w, err := oblivisync.OpenWriter(be, []byte(testPass), oblivisync.Options{StateDir: t.TempDir(), UnsafeNoFsync: true, MaxPending: 600 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	a, err := w.Create(1, "f", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := newRaw(w, time.Second, slog.New(slog.DiscardHandler))
	in := &fuse.WriteIn{InHeader: fuse.InHeader{NodeId: a.Ino}, Offset: 0}
	n, st := r.Write(nil, in, make([]byte, 1<<20))
	got, _ := w.GetAttr(a.Ino)
	t.Logf("write: n=%d status=%v; file size now %d", n, st, got.Size)
	if st != fuse.OK && got.Size != 0 {
		t.Fatalf("write failed with %v, but the file grew to %d bytes", st, got.Size)
	}
	if st == fuse.OK && uint64(n) != got.Size {
		t.Fatalf("short write of %d bytes, file is %d", n, got.Size)
	}
}
