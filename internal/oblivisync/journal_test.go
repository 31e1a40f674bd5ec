package oblivisync

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crashAfterWrites writes two files and "crashes" (no checkpoint), returning the state
// dir and the journal's last segment path.
func crashAfterWrites(t *testing.T) (string, string, string) {
	dir := newBackend(t, 16, 16<<10, 2)
	state := t.TempDir()
	w := openW(t, dir, state)
	a := must(w.Create(rootIno, "a", 0o644, 0, 0))
	must(w.Write(a.Ino, 0, []byte("first file, acknowledged")))
	b := must(w.Create(rootIno, "b", 0o644, 0, 0))
	must(w.Write(b.Ino, 0, []byte("second file, torn")))
	w.closeFiles()
	segs := must(listSegments(state))
	return dir, state, filepath.Join(state, segName(segs[len(segs)-1]))
}

// TestJournalTornTail: a record cut short by a crash mid-append is dropped on recovery;
// everything before it survives.
func TestJournalTornTail(t *testing.T) {
	dir, state, seg := crashAfterWrites(t)
	st := must(os.Stat(seg))
	if err := os.Truncate(seg, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	w := openW(t, dir, state)
	defer w.Close()
	a := must(w.Lookup(rootIno, "a"))
	buf := make([]byte, 64)
	if n := must(w.Read(a.Ino, 0, buf)); string(buf[:n]) != "first file, acknowledged" {
		t.Fatalf("a = %q", buf[:n])
	}
	b := must(w.Lookup(rootIno, "b"))
	if b.Size != 0 {
		t.Fatalf("torn write of b applied: size %d", b.Size)
	}
}

// TestJournalCorruptRecord: a bad record that is not the torn tail is an integrity error
// naming the journal file, not silently skipped.
func TestJournalCorruptRecord(t *testing.T) {
	dir, state, seg := crashAfterWrites(t)
	raw := must(os.ReadFile(seg))
	raw[40] ^= 1 // inside the first record
	os.WriteFile(seg, raw, 0o600)
	_, err := OpenWriter(dir, testPass, Options{StateDir: state})
	if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), ".log") {
		t.Fatalf("got %v, want ErrIntegrity naming the journal segment", err)
	}
}

// TestSecondWriterLocked: one writer per state directory.
func TestSecondWriterLocked(t *testing.T) {
	dir := newBackend(t, 8, 16<<10, 2)
	state := t.TempDir()
	w := openW(t, dir, state)
	defer w.Close()
	if _, err := OpenWriter(dir, testPass, Options{StateDir: state}); !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
}
