package oblivisync

import (
	"errors"
	"math"
	"testing"
)

// File sizes stay within what the backend can hold, whatever a caller or a page record says.

// A truncate or write far past the backend's capacity used to build one in-memory
// fragment reference per C bytes of the new size (gigabytes for a large sparse file) and,
// at sizes near 2^64, wrapped fragCount so a later read indexed past the fragment list and
// panicked. The journal replayed the same operation on every restart. Both are refused.
func TestFileSizeBounded(t *testing.T) {
	dir := newBackend(t, 16, 16<<10, 2)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	a := must(w.Create(rootIno, "f", 0o644, 0, 0))
	limit := w.maxFileSize()
	for _, size := range []uint64{math.MaxUint64, math.MaxUint64 - 100, 1 << 62, limit + 1} {
		s := size
		if _, err := w.SetAttr(a.Ino, SetAttr{Size: &s}); !errors.Is(err, ErrFileTooBig) {
			t.Fatalf("truncate to %d: got %v, want ErrFileTooBig", size, err)
		}
	}
	if _, err := w.Write(a.Ino, int64(limit), []byte("x")); !errors.Is(err, ErrFileTooBig) {
		t.Fatalf("write past the limit: got %v, want ErrFileTooBig", err)
	}
	buf := make([]byte, 16)
	if _, err := w.Read(a.Ino, 1<<40, buf); err != nil {
		t.Fatal(err)
	}
	// Up to the limit is fine (a sparse file), and survives a restart.
	s := limit
	if _, err := w.SetAttr(a.Ino, SetAttr{Size: &s}); err != nil {
		t.Fatalf("truncate to the limit: %v", err)
	}
	must(w.Write(a.Ino, int64(limit)-3, []byte("end")))
	w.Close()
	w = openW(t, dir, w.StateDir())
	if n, err := w.Read(a.Ino, int64(limit)-3, buf); err != nil || string(buf[:n]) != "end" {
		t.Fatalf("after restart: %q %v", buf[:n], err)
	}
}

// A page record whose size makes fragCount wrap around must be rejected, not decoded
// into a node whose reads index past its fragment list.
func TestDecodeNodeRejectsWrappingSize(t *testing.T) {
	n := &node{Ino: 2, Parent: 1, Name: "x", Mode: 0o100644, Size: math.MaxUint64}
	n.Frags = make([]ref, fragCount(n.Size, vectorGeometry.C)) // wraps to a tiny count
	if _, _, err := decodeNode(appendNode(nil, n), vectorGeometry, 4); !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
}
