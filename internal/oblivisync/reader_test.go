package oblivisync

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The reader: epochs as a sync client delivers them.

// On a reader's machine the sync client delivers an epoch's files in any order: the new
// superblock can arrive before a backend file it names. Reads used to fail at once with
// "rolled back?"; a reader now waits briefly for the file (a real rollback still fails).
func TestReaderWaitsForFilesInTransit(t *testing.T) {
	dir, ino, data := syncedBackend(t)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	f := r.t.get(ino).Frags[0].File
	path := filepath.Join(dir, blockName(f))
	old := must(os.ReadFile(path))
	w := openW(t, dir, t.TempDir())
	for w.sb.Written[f] == r.sb.Written[f] {
		if _, err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	cur := must(os.ReadFile(path))
	delete(r.be.cache, f)
	os.WriteFile(path, old, 0o600) // the new superblock is here, the new file is not yet
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(300 * time.Millisecond)
		// Deliver it as sync clients do (and as the writer writes): whole, by rename. An
		// in-place os.WriteFile let the reader see a truncated file in between (a flaky test).
		os.WriteFile(path+".delivery", cur, 0o600)
		os.Rename(path+".delivery", path)
	}()
	buf := make([]byte, len(data))
	n, err := r.Read(ino, 0, buf)
	<-done
	if err != nil || !bytes.Equal(buf[:n], data) {
		t.Fatalf("read while a file is in transit: %d bytes, %v", n, err)
	}
	delete(r.be.cache, f)
	os.WriteFile(path, old, 0o600) // and if it never comes, that is a rollback
	if _, err := r.Read(ino, 0, buf); !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("persistent rollback: got %v", err)
	}
}

// The reader's superblock identity included the whole stat, atime too: reading the
// superblock changed it, so every new epoch was loaded twice.
func TestSuperStampIgnoresAtime(t *testing.T) {
	dir := newBackend(t, 4, 4096, 1)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	before := r.superStamp()
	p := filepath.Join(dir, superName)
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, past.Add(time.Hour/2), time.Time{}); err != nil { // atime only
		t.Fatal(err)
	}
	if after := r.superStamp(); after != before {
		t.Fatalf("stamp changed with the atime:\n%s\n%s", before, after)
	}
}
