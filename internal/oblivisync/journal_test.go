package oblivisync

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// journal.sync cleared unsynced before it fsynced, so after a failed fsync the next sync
// fsynced nothing and reported success: an fsync on the mount after a failed one said the
// write was durable although its record never was, and Close then wrote a checkpoint
// referring to it. Retrying is no cure either: after a failed fsync Linux may drop the
// dirty pages and report success to the next fsync ("fsyncgate"). The journal now stays
// failed, the writer stops with the error, and a restart recovers what the journal holds.
func TestJournalFsyncFailureIsSticky(t *testing.T) {
	dir := newBackend(t, 8, 8192, 2)
	state := t.TempDir()
	w, err := OpenWriter(dir, testPass, Options{StateDir: state}) // fsync on
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fail, fsyncs := true, 0
	w.j.syncFile = func(f *os.File) error {
		if fail {
			fail = false
			return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
		fsyncs++
		return f.Sync()
	}
	f := must(w.Create(rootIno, "f", 0o644, 0, 0))
	content := []byte("acknowledged, then an fsync failed")
	must(w.Write(f.Ino, 0, content))
	if err := w.Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("first flush: got %v, want EIO", err)
	}
	if err := w.Flush(); err == nil {
		t.Fatalf("a flush after a failed journal fsync reported success (%d journal fsyncs since)", fsyncs)
	}
	if _, err := w.Write(f.Ino, 0, []byte("more")); err == nil || !strings.Contains(err.Error(), "journal fsync") {
		t.Fatalf("write after a failed journal fsync: got %v, want the fsync error", err)
	}
	epoch := w.sb.Epoch
	if _, err := w.Sync(); err == nil || !strings.Contains(err.Error(), "journal fsync") {
		t.Fatalf("epoch after a failed journal fsync: got %v, want the fsync error", err)
	}
	if r := must(OpenReader(dir, testPass)); r.Epoch() != epoch {
		t.Fatalf("superblock written (epoch %d -> %d) after a failed journal fsync", epoch, r.Epoch())
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "journal fsync") {
		t.Fatalf("close after a failed journal fsync: got %v, want the fsync error", err)
	}
	// The process did not crash: a restart replays the journal and loses nothing.
	w2, err := OpenWriter(dir, testPass, Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	drain(t, w2, 100)
	r := must(OpenReader(dir, testPass))
	buf := make([]byte, 64)
	if n := must(r.Read(must(r.Lookup(rootIno, "f")).Ino, 0, buf)); !bytes.Equal(buf[:n], content) {
		t.Fatalf("after restart f = %q, want %q", buf[:n], content)
	}
}

// A writer killed before it fsynced its journal leaves its last records in the page cache
// only. The next writer replayed them as synced, so the checkpoint it writes at start
// could refer to records a power loss then took. The replayed tail is fsynced first.
func TestJournalReplayedTailFsynced(t *testing.T) {
	dir, state, seg := crashAfterWrites(t)
	be := must(openBackend(dir, testPass))
	var synced []string
	j := &journal{dir: state, key: be.keys.journal, fsync: true, limit: 1 << 20,
		syncFile: func(f *os.File) error { synced = append(synced, f.Name()); return nil }}
	if err := j.replay(0, 0, func(uint32, int64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if err := j.sync(); err != nil || len(synced) != 1 || synced[0] != seg {
		t.Fatalf("sync after replay: %v, fsynced %q, want %s", err, synced, seg)
	}
}
