package oblivisync

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"
)

func bigBackend(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "backend")
	if err := Init(dir, testPass, Params{Files: 2, FileSize: 32 << 20, K: 1, DripTime: 10 * time.Millisecond}, testKDF); err != nil {
		t.Fatal(err)
	}
	return dir
}

// With B > ~17 MiB (init accepts up to 1 GiB) a fragment can exceed 8 MiB, and image
// records (partial overwrite of a synced fragment, or compaction after 32 extents) are
// whole fragments. Found by review: the journal's record limit was 8 MiB on the read side
// only; append wrote such records and the writes were acknowledged, then refused.

// (a) The image is the journal's last record: replay took it for a torn tail and cut it
// off, with the write in the same record: an fsynced write silently lost.
func TestJournalKeepsLargeImageAcrossCrash(t *testing.T) {
	dir, state := bigBackend(t), t.TempDir()
	w := openW(t, dir, state)
	f := must(w.Create(rootIno, "big", 0o644, 0, 0))
	must(w.Write(f.Ino, 0, bytes.Repeat([]byte{'a'}, 32*maxWriteChunk))) // 32 extents: no compaction
	size := uint64(w.be.g.C)
	must(w.SetAttr(f.Ino, SetAttr{Size: &size})) // one full fragment, > maxRecord
	drain(t, w, 50)
	if _, err := w.Write(f.Ino, 100, []byte("XYZ")); err != nil { // acknowledged
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // and fsynced
		t.Fatal(err)
	}
	w.closeFiles() // crash
	w, err := OpenWriter(dir, testPass, Options{StateDir: state, UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("restart after crash: %v", err)
	}
	defer w.Close()
	buf := make([]byte, 3)
	must(w.Read(f.Ino, 100, buf))
	if string(buf) != "XYZ" {
		t.Fatalf("after restart bytes 100..103 are %q, want the acknowledged \"XYZ\"", buf)
	}
}

// (b) Writing a 9 MiB file: the 33rd extent compacts into an 8.25 MiB image; every write
// succeeds, then the epoch cannot read it back and the journal cannot be replayed.
func TestJournalReadsLargeImage(t *testing.T) {
	dir, state := bigBackend(t), t.TempDir()
	w := openW(t, dir, state)
	f := must(w.Create(rootIno, "nine-mib", 0o644, 0, 0))
	if _, err := w.Write(f.Ino, 0, bytes.Repeat([]byte{'b'}, 9<<20)); err != nil {
		t.Fatal(err)
	}
	_, serr := w.Sync()
	w.closeFiles()
	w2, oerr := OpenWriter(dir, testPass, Options{StateDir: state, UnsafeNoFsync: true})
	if oerr == nil {
		w2.Close()
	}
	if serr != nil || oerr != nil {
		t.Fatalf("acknowledged 9 MiB write: epoch: %v; restart: %v", serr, oerr)
	}
}
