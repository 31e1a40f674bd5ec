package oblivisync

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func copyFlat(t *testing.T, src, dst string) {
	t.Helper()
	for _, e := range must(os.ReadDir(dst)) {
		if e.Type().IsRegular() {
			os.Remove(filepath.Join(dst, e.Name()))
		}
	}
	for _, e := range must(os.ReadDir(src)) {
		if e.Type().IsRegular() {
			if err := os.WriteFile(filepath.Join(dst, e.Name()), must(os.ReadFile(filepath.Join(src, e.Name()))), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// An epoch's backend files written before a crash (no superblock), put back by the cloud
// after a restarted writer committed an epoch with the same number: the superblock's
// per-file tags (format: superblock extension 0x02) make readers refuse them.
func TestAbortedEpochFilesNotAcceptedLater(t *testing.T) {
	a, b := bytes.Repeat([]byte("A"), 1000), bytes.Repeat([]byte("B"), 1000)
	for attempt := 0; attempt < 20; attempt++ {
		dir, state := newBackend(t, 2, 16<<10, 2), t.TempDir()
		w := openW(t, dir, state)
		x := must(w.Create(rootIno, "x", 0o644, 0, 0))
		must(w.Write(x.Ino, 0, a))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		savedState := t.TempDir()
		copyFlat(t, state, savedState)
		superBefore := must(os.ReadFile(filepath.Join(dir, superName)))
		w = openW(t, dir, state)
		rep := must(w.Sync())
		aborted := map[uint32][]byte{}
		for _, f := range rep.Files {
			aborted[uint32(f)] = must(os.ReadFile(filepath.Join(dir, blockName(uint32(f)))))
		}
		w.closeFiles()
		copyFlat(t, savedState, state)
		os.WriteFile(filepath.Join(dir, superName), superBefore, 0o600)
		os.Remove(filepath.Join(dir, leaseName))
		w = openW(t, dir, state)
		must(w.Write(x.Ino, 0, b))
		rep2 := must(w.Sync())
		if rep2.PendingInodes != 0 {
			t.Fatalf("not drained in one epoch: %+v", rep2)
		}
		w.Close()
		if got := must(openAndRead(dir, x.Ino, len(b))); !bytes.Equal(got, b) {
			t.Fatalf("committed content: %q", got[:8])
		}
		for f, img := range aborted {
			os.WriteFile(filepath.Join(dir, blockName(f)), img, 0o600)
		}
		got, err := openAndRead(dir, x.Ino, len(a))
		t.Logf("attempt %d (aborted epoch %d, committed %d): %v", attempt, rep.Epoch, rep2.Epoch, err)
		if err == nil {
			t.Fatalf("attempt %d: aborted epoch %d's files accepted under the committed epoch %d's superblock: read %q..., the superblock committed %q...", attempt, rep.Epoch, rep2.Epoch, got[:8], b[:8])
		}
	}
}

// The writer's own reads of backend files check the tags too: it refuses to build its
// next epoch on an aborted epoch's file put back under a committed superblock.
func TestAbortedEpochFilesRefusedByWriter(t *testing.T) {
	dir, state := newBackend(t, 2, 16<<10, 2), t.TempDir()
	w := openW(t, dir, state)
	x := must(w.Create(rootIno, "x", 0o644, 0, 0))
	must(w.Write(x.Ino, 0, []byte("committed")))
	must(w.Sync())
	sb := w.sb
	// A file image of the same epoch number under another nonce, as an aborted epoch
	// numbered like the committed one would have left.
	f := uint32(0)
	plain := must(w.be.readBlock(f, sb.Written[f], sb.tag(f)))
	img := sealContainer(&w.be.keys.backend, w.be.id, 'B', f, plain, fileNonce())
	if err := os.WriteFile(filepath.Join(dir, blockName(f)), img, 0o600); err != nil {
		t.Fatal(err)
	}
	w.be.mu.Lock()
	w.be.cache = map[uint32]cached{}
	w.be.order = nil
	w.be.mu.Unlock()
	_, err := w.Sync()
	wantErr(t, err, ErrIntegrity, "not the version the superblock committed")
	w.closeFiles()
}

// Superblocks without the tags field (older writers) keep the check by epoch number.
func TestSuperblockWithoutTagsStillRead(t *testing.T) {
	dir, state := newBackend(t, 4, 16<<10, 2), t.TempDir()
	w := openW(t, dir, state)
	x := must(w.Create(rootIno, "x", 0o644, 0, 0))
	must(w.Write(x.Ino, 0, []byte("old superblock")))
	drain(t, w, 20)
	if !w.sb.HasTags {
		t.Fatal("the writer's superblock has no tags")
	}
	w.Close()
	be := must(openBackend(dir, testPass))
	sb := must(be.readSuper())
	sb.HasTags, sb.Tags = false, nil
	if err := be.writeSuper(sb, randomBytes(superNonceLen)); err != nil {
		t.Fatal(err)
	}
	if sb2 := must(be.readSuper()); sb2.HasTags || !sb2.HasChange {
		t.Fatalf("re-read superblock: tags %v, last change %v", sb2.HasTags, sb2.HasChange)
	}
	if got := must(openAndRead(dir, x.Ino, 14)); string(got) != "old superblock" {
		t.Fatalf("read %q", got)
	}
	// Init refuses a file size that leaves the superblock no room for the tags.
	err := Init(filepath.Join(t.TempDir(), "b"), testPass, Params{Files: 498, FileSize: 4096, K: 2, DripTime: time.Second}, testKDF)
	wantErr(t, err, ErrInvalid, "at least 8074 bytes")
}
