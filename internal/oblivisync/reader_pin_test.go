package oblivisync

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// A handle pins the version it opened: reads through it return that version after the
// writer replaced the file in place (same inode, same length: best fit may even put the
// new fragments where the old ones were), as long as the reader follows the epochs; a
// reader that falls further behind gets ErrStale, never bytes of the new version.
func TestReaderHandlePinsVersion(t *testing.T) {
	for _, copyAll := range []bool{false, true} {
		dir := newBackend(t, 16, 16<<10, 3)
		w := openW(t, dir, t.TempDir())
		f := must(w.Create(rootIno, "f", 0o644, 0, 0))
		v1, v2 := bytes.Repeat([]byte{1}, 60<<10), bytes.Repeat([]byte{2}, 60<<10)
		must(w.Write(f.Ino, 0, v1))
		drain(t, w, 100)
		r := must(OpenReader(dir, testPass))
		if !copyAll {
			r.copyMax = 0 // read in place
		}
		fh, _, err := r.Open(f.Ino)
		if err != nil {
			t.Fatal(err)
		}
		must(w.Write(f.Ino, 0, v2))
		buf, cur := make([]byte, len(v1)), make([]byte, len(v2))
		var committed uint64      // the epoch that first showed v2 by inode
		for i := 0; i < 30; i++ { // v2 commits, v1's space is freed and reused
			must(w.Sync())
			if err := r.Refresh(); err != nil {
				t.Fatal(err)
			}
			if n, _ := r.Read(f.Ino, 0, cur); committed == 0 && bytes.Equal(cur[:n], v2) {
				committed = r.Epoch()
			}
			n, err := r.ReadHandle(fh, 0, buf)
			switch {
			case err == nil && bytes.Equal(buf[:n], v1):
			// In place, v1's fragments are guaranteed for two epochs after the last one
			// that committed v1 (committed-1); after that the writer may reuse them and
			// the handle must say so, never return other bytes. A copied handle keeps v1.
			case !copyAll && errors.Is(err, ErrStale) && committed != 0 && r.Epoch() > committed+1:
			default:
				t.Fatalf("copy=%v epoch %d (v2 committed at %d): handle read %d bytes (first %#x), %v; want version 1",
					copyAll, r.Epoch(), committed, n, buf[0], err)
			}
		}
		if committed == 0 {
			t.Fatal("version 2 never committed")
		}
		if n, _ := r.Read(f.Ino, 0, buf); !bytes.Equal(buf[:n], v2) {
			t.Fatalf("a new read by inode does not show version 2")
		}
		if _, attr, err := r.Open(f.Ino); err != nil || attr.Size != uint64(len(v2)) {
			t.Fatalf("reopen: %+v %v", attr, err)
		}
		// Fall behind: a handle opened at v2, then many epochs replace it without the
		// reader looking, then read: v2 intact (copied, or still in place) or ErrStale.
		fh2, _, _ := r.Open(f.Ino)
		v3 := bytes.Repeat([]byte{3}, 60<<10)
		must(w.Write(f.Ino, 0, v3))
		for i := 0; i < 40; i++ {
			must(w.Sync())
		}
		n, err := r.ReadHandle(fh2, 0, buf)
		switch {
		case copyAll && (err != nil || !bytes.Equal(buf[:n], v2)):
			t.Fatalf("copied handle after falling behind: %d bytes %v", n, err)
		case !copyAll && err == nil && !bytes.Equal(buf[:n], v2):
			t.Fatalf("in-place handle after falling behind returned other bytes (first %#x)", buf[0])
		case !copyAll && err != nil && !errors.Is(err, ErrStale):
			t.Fatalf("in-place handle after falling behind: %v, want version 2 or ErrStale", err)
		}
		r.Release(fh)
		r.Release(fh2)
		w.Close()
	}
}

// pinScene sets up a backend whose layout leaves the writer one choice, whatever files
// an epoch picks: 2 backend files (4 sides), both rewritten every epoch (k = N). f and a
// filler g are one full block each (a whole side), the metadata pages share a third side.
// A reader opens f at version 1 (read in place) and follows the epochs; version 2 of f
// then commits into the one empty side. Any later version of f can only go to the side
// version 1 leaves once the writer may reuse it: exactly version 1's fragment reference.
func pinScene(t *testing.T) (dir, state string, w *Writer, r *Reader, ino, fh uint64, v1, v2 []byte) {
	t.Helper()
	dir, state = newBackend(t, 2, 16<<10, 2), t.TempDir()
	w = openW(t, dir, state)
	C := w.be.g.C
	f := must(w.Create(rootIno, "f", 0o644, 0, 0))
	g := must(w.Create(rootIno, "g", 0o644, 0, 0))
	v1, v2 = bytes.Repeat([]byte{1}, C), bytes.Repeat([]byte{2}, C)
	must(w.Write(f.Ino, 0, v1))
	must(w.Write(g.Ino, 0, bytes.Repeat([]byte{9}, C)))
	drain(t, w, 5)
	r = must(OpenReader(dir, testPass))
	r.copyMax = 0            // read in place (as a file over PinCopyMax is)
	r.MinRefresh = time.Hour // the test says when the reader looks at a new epoch
	fh, _, err := r.Open(f.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if fr := r.pins[fh].n.Frags; len(fr) != 1 || fr[0].Off != 0 || int(fr[0].Stored) != C {
		t.Fatalf("setup: version 1 is not one full side: %+v", fr)
	}
	must(w.Write(f.Ino, 0, v2))
	must(w.Sync())
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, C)
	if n, err := r.Read(f.Ino, 0, buf); err != nil || !bytes.Equal(buf[:n], v2) {
		t.Fatalf("setup: version 2 not committed: %v", err)
	}
	if n, err := r.ReadHandle(fh, 0, buf); err != nil || !bytes.Equal(buf[:n], v1) {
		t.Fatalf("setup: handle does not read version 1: %v", err)
	}
	return dir, state, w, r, f.Ino, fh, v1, v2
}

// checkHandle fails unless a handle read returns want or ErrStale; it reports ErrStale.
// The read goes to the backend files on disk: the reader's cache of decrypted files
// (8 of them) is dropped first, as it is for a file over 8 MiB, which spans more.
func checkHandle(t *testing.T, r *Reader, fh uint64, want []byte, when string) (stale bool) {
	t.Helper()
	r.be.mu.Lock()
	r.be.cache, r.be.order = map[uint32]cached{}, nil
	r.be.mu.Unlock()
	buf := make([]byte, len(want))
	n, err := r.ReadHandle(fh, 0, buf)
	switch {
	case errors.Is(err, ErrStale):
		return true
	case err != nil:
		t.Fatalf("%s: handle read: %v, want version %d or ErrStale", when, err, want[0])
	case !bytes.Equal(buf[:n], want):
		t.Fatalf("%s: handle opened at version %d read %d bytes of version %d (first byte %#x), want version %d or ErrStale",
			when, want[0], n, buf[0], buf[0], want[0])
	}
	return false
}

// Session 11 review, first cause: the reader matched a pinned version by its fragments'
// locations, so a later version the writer legitimately put where the pinned one was
// (allowed from the third epoch after the pinned one was last committed) was taken for
// it, and the handle read the new version's bytes although the reader followed every
// epoch. It must answer ErrStale instead.
func TestReaderPinNotFooledByReusedLocation(t *testing.T) {
	_, _, w, r, ino, fh, v1, _ := pinScene(t)
	defer w.Close()
	v3 := bytes.Repeat([]byte{3}, len(v1))
	must(w.Write(ino, 0, v3))
	reused := false
	for i := 0; i < 6; i++ {
		must(w.Sync())
		if err := r.Refresh(); err != nil {
			t.Fatal(err)
		}
		if n := r.t.get(ino); n != nil && slices.Equal(n.Frags, r.pins[fh].n.Frags) {
			reused = true // version 3 is committed exactly where version 1 was
		}
		stale := checkHandle(t, r, fh, v1, fmt.Sprintf("epoch %d", r.Epoch()))
		if reused && !stale {
			t.Fatalf("epoch %d: version 1's location holds version 3, but the handle still reads", r.Epoch())
		}
	}
	if !reused {
		t.Fatal("setup: version 3 never took version 1's place")
	}
}

// Session 11 review, second cause: the writer kept the previous committed state (whose
// fragments it must not overwrite for one more epoch) in memory only, so the first epoch
// after a restart reused the space of the version the epoch before the restart replaced,
// one epoch early. A reader that last saw that version committed one epoch before then
// trusted the rewritten file and read the new version's bytes. Here the reader does not
// even look at the new epoch before reading (it need not follow every epoch).
func TestReaderPinSurvivesWriterRestart(t *testing.T) {
	dir, state, w, r, ino, fh, v1, v2 := pinScene(t)
	fh2, _, err := r.Open(ino) // version 2, committed at the epoch before the restart
	if err != nil {
		t.Fatal(err)
	}
	v3 := bytes.Repeat([]byte{3}, len(v1))
	must(w.Write(ino, 0, v3))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = openW(t, dir, state)
	defer w.Close()
	must(w.Sync()) // version 3 commits where version 1 was
	checkHandle(t, r, fh, v1, "first epoch after the restart")
	// Version 2 was still committed at the epoch before the restart: its fragments stay.
	if checkHandle(t, r, fh2, v2, "first epoch after the restart") {
		t.Fatal("first epoch after the restart: the handle of version 2, committed just before it, is stale")
	}
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if n := r.t.get(ino); n == nil || !slices.Equal(n.Frags, r.pins[fh].n.Frags) {
		t.Fatal("setup: version 3 did not take version 1's place in the first epoch after the restart")
	}
	for i := 0; i < 4; i++ {
		must(w.Sync())
		if err := r.Refresh(); err != nil {
			t.Fatal(err)
		}
		checkHandle(t, r, fh, v1, fmt.Sprintf("epoch %d", r.Epoch()))
		checkHandle(t, r, fh2, v2, fmt.Sprintf("epoch %d", r.Epoch()))
	}
}

// The version identity (the record's data epoch) lets a handle keep reading in place
// however far the reader fell behind, as long as its version is still committed: here
// the file is renamed and chmod'ed (its record is rewritten with the same content) and
// files on the same metadata page change, over many epochs the reader does not look at.
func TestReaderPinKeepsCommittedVersionWhenBehind(t *testing.T) {
	dir := newBackend(t, 16, 16<<10, 3)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	f := must(w.Create(rootIno, "f", 0o644, 0, 0))
	v1 := bytes.Repeat([]byte{1}, 40<<10)
	must(w.Write(f.Ino, 0, v1))
	drain(t, w, 100)
	r := must(OpenReader(dir, testPass))
	r.copyMax = 0
	r.MinRefresh = time.Hour
	fh, _, err := r.Open(f.Ino)
	if err != nil {
		t.Fatal(err)
	}
	opened := r.Epoch()
	if err := w.Rename(rootIno, "f", rootIno, "f2", false); err != nil {
		t.Fatal(err)
	}
	mode := uint32(0o600)
	must(w.SetAttr(f.Ino, SetAttr{Mode: &mode}))
	for i := 0; i < 10; i++ {
		g := must(w.Create(rootIno, fmt.Sprintf("g%d", i), 0o644, 0, 0))
		must(w.Write(g.Ino, 0, bytes.Repeat([]byte{byte(i)}, 3000)))
		drain(t, w, 100)
	}
	if w.sb.Epoch <= opened+2 {
		t.Fatalf("setup: the writer is only at epoch %d (opened at %d)", w.sb.Epoch, opened)
	}
	if c := w.com[f.Ino]; c == nil || c.Name != "f2" || c.Ver == 0 || c.Ver > opened {
		t.Fatalf("setup: committed record of f: %+v", c)
	}
	if checkHandle(t, r, fh, v1, fmt.Sprintf("opened at epoch %d, read at %d", opened, w.sb.Epoch)) {
		t.Fatalf("the handle's version is still committed (renamed, chmod'ed) but the read is stale")
	}
	if r.Epoch() != w.sb.Epoch {
		t.Fatalf("the reader did not move to epoch %d (at %d): the read did not need the identity", w.sb.Epoch, r.Epoch())
	}
}
