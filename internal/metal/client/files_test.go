package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/segment"
)

// memBlocks is an in-memory deployment for the segmentation logic (the real servers are
// exercised by internal/metal/server's tests and cmd/veil's TestMetalCLI*): it records
// every access, and fails the write numbered failAt (1-based) if set.
type memBlocks struct {
	bs     int
	data   map[uint64][]byte
	log    []string
	writes int
	failAt int
}

func (m *memBlocks) BlockSize() int { return m.bs }

func (m *memBlocks) Read(_ context.Context, capability []byte, id uint64) ([]byte, error) {
	m.log = append(m.log, fmt.Sprintf("r%d", id))
	if string(capability) != "cap" {
		return nil, access.ErrRefused
	}
	if b, ok := m.data[id]; ok {
		return bytes.Clone(b), nil
	}
	return make([]byte, m.bs), nil
}

func (m *memBlocks) Write(_ context.Context, capability []byte, id uint64, block []byte) error {
	m.writes++
	if m.writes == m.failAt {
		return errors.New("connection reset")
	}
	if len(block) != m.bs {
		return fmt.Errorf("a write of %d bytes", len(block))
	}
	m.log = append(m.log, fmt.Sprintf("w%d", id))
	m.data[id] = bytes.Clone(block)
	return nil
}

func caps(lo, hi uint64) CapabilityFunc {
	return func(id uint64) ([]byte, error) {
		if id < lo || id > hi {
			return nil, fmt.Errorf("no capability for file id %d", id)
		}
		return []byte("cap"), nil
	}
}

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*31)
	}
	return b
}

// TestFileRoundTrip: files of 0..several segments come back byte-identical, every access is
// one whole block, the head is written last, and --pad makes every write and read exactly
// that many accesses.
func TestFileRoundTrip(t *testing.T) {
	ctx := context.Background()
	m := &memBlocks{bs: 64, data: map[uint64][]byte{}}
	for _, n := range []int{0, 1, 31, 32, 62, 100, 400} {
		data := fill(n, byte(n))
		m.log = nil
		s, err := writeFile(ctx, m, caps(0, 63), 10, data, FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := max(1, (n+30)/31)
		if int(s.Segments) != want || s.Size != uint64(n) || len(m.log) != want || m.log[len(m.log)-1] != "w10" {
			t.Fatalf("%d bytes: span %+v, accesses %v", n, s, m.log)
		}
		m.log = nil
		got, rs, err := readFile(ctx, m, caps(0, 63), 10, FileOptions{})
		if err != nil || !bytes.Equal(got, data) || rs != s || len(m.log) != want {
			t.Fatalf("%d bytes: read %d bytes, span %+v, accesses %v (%v)", n, len(got), rs, m.log, err)
		}
	}
	var done []int
	m.log = nil
	o := FileOptions{Pad: 5, Progress: func(d, total int) {
		if total != 5 {
			t.Fatalf("total %d", total)
		}
		done = append(done, d)
	}}
	if _, err := writeFile(ctx, m, caps(0, 63), 20, fill(40, 1), o); err != nil || strings.Join(m.log, " ") != "w21 w20 r20 r20 r20" {
		t.Fatalf("padded write: %v %v", m.log, err)
	}
	m.log = nil
	if got, _, err := readFile(ctx, m, caps(0, 63), 20, o); err != nil || !bytes.Equal(got, fill(40, 1)) || len(m.log) != 5 {
		t.Fatalf("padded read: %v %v", m.log, err)
	}
	if fmt.Sprint(done) != "[1 2 3 4 5 1 2 3 4 5]" {
		t.Fatalf("progress %v", done)
	}
	if _, err := writeFile(ctx, m, caps(0, 63), 20, fill(200, 1), FileOptions{Pad: 2}); err == nil || !strings.Contains(err.Error(), "more than --pad 2") {
		t.Fatalf("a file past --pad: %v", err)
	}
	if _, err := writeFile(ctx, m, caps(0, 63), 20, fill(10, 1), FileOptions{Pad: -1}); err == nil || !strings.Contains(err.Error(), "--pad -1") {
		t.Fatalf("a negative --pad: %v", err)
	}
	m.log = nil
	if got, _, err := readFile(ctx, m, caps(0, 63), 50, FileOptions{}); !errors.Is(err, segment.ErrEmpty) || got != nil || len(m.log) != 1 ||
		!strings.HasPrefix(err.Error(), "file id 50: never written: no file starts there") {
		t.Fatalf("a never-written id: %q %v after %d accesses", got, err, len(m.log))
	}
	if _, err := writeFile(ctx, m, caps(0, 63), 50, nil, FileOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, s, err := readFile(ctx, m, caps(0, 63), 50, FileOptions{}); err != nil || got == nil || len(got) != 0 || s.Segments != 1 {
		t.Fatalf("an empty file: %q %+v %v", got, s, err)
	}
}

// TestFileRefusals: a file needing ids without a capability is refused before any access;
// reading from the middle of a file names its start; an interrupted overwrite and an
// overlapping write are detected on reading, and an interruption before the head leaves
// nothing of the old file overwritten when the new one only grows past it.
func TestFileRefusals(t *testing.T) {
	ctx := context.Background()
	m := &memBlocks{bs: 64, data: map[uint64][]byte{}}
	if _, err := writeFile(ctx, m, caps(0, 3), 2, fill(100, 0), FileOptions{}); err == nil || !strings.Contains(err.Error(), "needs file ids 2..5") || len(m.log) != 0 {
		t.Fatalf("past the capability: %v (accesses %v)", err, m.log)
	}
	old := fill(100, 7) // 4 segments at 0..3
	if _, err := writeFile(ctx, m, caps(0, 15), 0, old, FileOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readFile(ctx, m, caps(0, 15), 2, FileOptions{}); err == nil || err.Error() != "file id 2 is not the start of a file: it holds segment 3 of 4 of the file at id 0" {
		t.Fatalf("read from the middle: %v", err)
	}
	// An overwrite interrupted after two of four segments: the old head, two new segments.
	m.writes, m.failAt = 0, 3
	_, err := writeFile(ctx, m, caps(0, 15), 0, fill(100, 9), FileOptions{})
	if err == nil || !strings.Contains(err.Error(), "interrupted after 2 of 4 segments") {
		t.Fatalf("interrupted write: %v", err)
	}
	m.failAt = 0
	_, _, err = readFile(ctx, m, caps(0, 15), 0, FileOptions{})
	if err == nil || !strings.Contains(err.Error(), "file id 1: segments of different writes: segment 2 of 4 belongs to another write") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("read after an interrupted overwrite: %v", err)
	}
	// Rewritten whole, then another file written over its third segment.
	if _, err := writeFile(ctx, m, caps(0, 15), 0, old, FileOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := writeFile(ctx, m, caps(0, 15), 2, []byte("short"), FileOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readFile(ctx, m, caps(0, 15), 0, FileOptions{}); err == nil || !strings.Contains(err.Error(), "file id 2: segments of different writes") {
		t.Fatalf("read after an overlapping write: %v", err)
	}
	// A one-segment file grown to three, interrupted before its head: the old file reads whole.
	if _, err := writeFile(ctx, m, caps(0, 15), 8, []byte("v1"), FileOptions{}); err != nil {
		t.Fatal(err)
	}
	m.writes, m.failAt = 0, 3
	if _, err := writeFile(ctx, m, caps(0, 15), 8, fill(80, 3), FileOptions{}); err == nil {
		t.Fatal("write did not fail")
	}
	if got, _, err := readFile(ctx, m, caps(0, 15), 8, FileOptions{}); err != nil || string(got) != "v1" {
		t.Fatalf("the old version after an interrupted growth: %q %v", got, err)
	}
	// A refusal by the servers is named as such.
	m.failAt = 0
	if _, _, err := readFile(ctx, m, func(uint64) ([]byte, error) { return []byte("bad"), nil }, 0, FileOptions{}); err == nil || err.Error() != "file id 0: refused by the servers' capability check" {
		t.Fatalf("refused: %v", err)
	}
}

// TestProfileFiles: Record replaces a file at the same id and drops those a write
// overlapped; Overlapping finds them.
func TestProfileFiles(t *testing.T) {
	p := &Profile{}
	p.Record(Span{First: 0, Segments: 3, Size: 90})
	p.Record(Span{First: 5, Segments: 2, Size: 40})
	if o := p.Overlapping(Span{First: 2, Segments: 4}); len(o) != 2 {
		t.Fatalf("overlapping 2..5: %+v", o)
	}
	if o := p.Overlapping(Span{First: 0, Segments: 6}); len(o) != 1 || o[0].First != 5 {
		t.Fatalf("overlapping 0..5 (the file at 0 itself is a replacement): %+v", o)
	}
	if o := p.Overlapping(Span{First: 3, Segments: 2}); len(o) != 0 {
		t.Fatalf("overlapping 3..4: %+v", o)
	}
	p.Record(Span{First: 2, Segments: 4, Size: 100})
	if fmt.Sprint(p.Files) != "[{2 4 100}]" {
		t.Fatalf("files after an overlapping write: %v", p.Files)
	}
}
