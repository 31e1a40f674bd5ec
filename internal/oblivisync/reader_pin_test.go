package oblivisync

import (
	"bytes"
	"errors"
	"testing"
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
