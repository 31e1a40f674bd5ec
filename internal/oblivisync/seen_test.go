package oblivisync

import (
	"fmt"

	"bytes"
	"errors"
	"github.com/veil-project/veil/internal/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idleBackend returns a backend with one committed file and a closed writer whose last
// non-idle epoch (and so its checkpoint) is several idle epochs behind the backend, plus
// the superblock as it was after the first of those idle epochs.
func idleBackend(t *testing.T) (dir, state string, old []byte, oldEpoch, last uint64) {
	t.Helper()
	dir, state = newBackend(t, 8, 16<<10, 2), t.TempDir()
	w := openW(t, dir, state)
	f := must(w.Create(rootIno, "a", 0o600, 0, 0))
	must(w.Write(f.Ino, 0, []byte("version 1")))
	drain(t, w, 50)
	rep := must(w.Sync()) // idle: no checkpoint
	if rep.FragsSynced != 0 || rep.Committed != 0 {
		t.Fatalf("epoch %d was not idle: %+v", rep.Epoch, rep)
	}
	old, oldEpoch = must(os.ReadFile(filepath.Join(dir, superName))), rep.Epoch
	for i := 0; i < 3; i++ {
		last = must(w.Sync()).Epoch
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, state, old, oldEpoch, last
}

// The cloud puts back an older, authentic superblock from the idle epochs after the
// writer's last checkpoint. Before the writer kept `seen`, it accepted it (the checkpoint
// was older still) and went on writing epoch numbers that already had a superblock, so
// two authentic superblocks then existed for each of those epochs and a running reader's
// rollback check (by epoch number) could be fooled with the pre-rollback ones.
func TestWriterRefusesRolledBackSuperblockAfterIdleEpochs(t *testing.T) {
	dir, state, old, oldEpoch, last := idleBackend(t)
	if err := os.WriteFile(filepath.Join(dir, superName), old, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenWriter(dir, testPass, Options{StateDir: state, UnsafeNoFsync: true})
	if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("superblock of epoch %d put back after epoch %d: got %v, want ErrIntegrity (rolled back)", oldEpoch, last, err)
	}
}

// A different authentic superblock at the very epoch this writer last wrote (another
// writer, or a copy made by one) is refused too.
func TestWriterRefusesOtherSuperblockAtSameEpoch(t *testing.T) {
	dir, state, _, _, last := idleBackend(t)
	be := must(openBackend(dir, testPass))
	sb := must(be.readSuper())
	if sb.Epoch != last {
		t.Fatalf("backend at epoch %d, want %d", sb.Epoch, last)
	}
	if err := be.writeSuper(sb, randomBytes(superNonceLen)); err != nil { // same content, fresh nonce
		t.Fatal(err)
	}
	_, err := OpenWriter(dir, testPass, Options{StateDir: state, UnsafeNoFsync: true})
	if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("other superblock at epoch %d: got %v, want ErrIntegrity (replaced)", last, err)
	}
}

// Without tampering, reopening works and a backend ahead of `seen` (a crash between the
// superblock and `seen`) is accepted.
func TestWriterSeenAcceptsCurrentAndNewer(t *testing.T) {
	dir, state, _, _, last := idleBackend(t)
	w := openW(t, dir, state)
	if w.sb.Epoch != last {
		t.Fatalf("reopened at epoch %d, want %d", w.sb.Epoch, last)
	}
	seen := must(os.ReadFile(filepath.Join(state, seenName)))
	must(w.Sync())
	w.Close()
	os.WriteFile(filepath.Join(state, seenName), seen, 0o600) // as if the crash came before `seen`
	w = openW(t, dir, state)
	defer w.Close()
	if w.sb.Epoch != last+1 {
		t.Fatalf("reopened at epoch %d, want %d", w.sb.Epoch, last+1)
	}
	if got := must(os.ReadFile(filepath.Join(state, seenName))); bytes.Equal(got, seen) {
		t.Fatal("seen not updated on open")
	}
}

const seenVectorsPath = "../../testdata/oblivisync/seen.json"

// TestSeenVectors pins the `seen` record byte for byte (v1, as reader-seen and older
// writers keep it, and v2 with the next nonce and the writer id), with records a writer
// must refuse; and the writer-id file.
func TestSeenVectors(t *testing.T) {
	var vs []vector
	testutil.Vectors(t, seenVectorsPath, &vs, func() any {
		ok := encodeSeen(0x0102030405060708, seq(24, 0x60))
		in := map[string]string{"epoch": "72623859790382856", "nonce": hx(seq(24, 0x60))}
		bad := append([]byte(nil), ok...)
		bad[0] = 2
		ok2 := encodeSeen2(seenRecord{Epoch: 0x0102030405060708, Nonce: seq(24, 0x60), Next: seq(24, 0x80)})
		in2 := map[string]string{"epoch": "72623859790382856", "nonce": hx(seq(24, 0x60)), "next": hx(seq(24, 0x80))}
		bad2 := append([]byte(nil), ok2...)
		bad2[0] = 1
		return []vector{
			{"seen", "seen", in, hx(ok), "ok"},
			{"seen, version 2", "seen", nil, hx(bad), "format"},
			{"seen, truncated", "seen", nil, hx(ok[:len(ok)-1]), "format"},
			{"seen v2", "seen", in2, hx(ok2), "ok"},
			{"seen v2 bytes, version 1", "seen", nil, hx(bad2), "format"},
			{"seen v2, truncated", "seen", nil, hx(ok2[:len(ok2)-1]), "format"},
		}
	})
	if len(vs) != 6 {
		t.Fatalf("%d vectors", len(vs))
	}
	for _, v := range vs {
		dir := t.TempDir()
		b := testutil.Unhex(t, v.Bytes)
		os.WriteFile(filepath.Join(dir, seenName), b, 0o600)
		rec, ok, err := readSeen(dir)
		switch v.Result {
		case "ok":
			if err != nil || !ok || fmt.Sprint(rec.Epoch) != v.Input["epoch"] || hx(rec.Nonce) != v.Input["nonce"] {
				t.Fatalf("%s: got %+v %v %v", v.Name, rec, ok, err)
			}
			re := encodeSeen(rec.Epoch, rec.Nonce)
			if rec.V2 {
				if hx(rec.Next) != v.Input["next"] {
					t.Fatalf("%s: got %+v", v.Name, rec)
				}
				re = encodeSeen2(rec)
			}
			if !bytes.Equal(re, b) {
				t.Fatalf("%s: re-encoding differs", v.Name)
			}
		case "format":
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: got %v, want ErrFormat", v.Name, err)
			}
		}
	}
}

// A reader that remembers (read-only mounts do) refuses, also after a restart, a
// superblock older than the newest it has shown; one that does not, or a new state
// directory, still trusts it (TestFieldsSuperblockReplay).
func TestReaderRemembersNewestEpoch(t *testing.T) {
	dir := newBackend(t, 8, 16<<10, 2)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	f := must(w.Create(rootIno, "a", 0o600, 0, 0))
	must(w.Write(f.Ino, 0, []byte("version 1")))
	drain(t, w, 50)
	old := must(os.ReadFile(filepath.Join(dir, superName)))
	state := t.TempDir()
	r := must(OpenReaderWith(dir, testPass, ReaderOptions{Remember: true, StateDir: state}))
	oldEpoch := r.Epoch()
	must(w.Write(f.Ino, 0, []byte("version 2")))
	drain(t, w, 50)
	if err := r.Refresh(); err != nil || r.Epoch() <= oldEpoch {
		t.Fatalf("refresh: %v, epoch %d", err, r.Epoch())
	}
	epoch, _, ok, err := readSeenFile(filepath.Join(state, readerSeenName))
	if err != nil || !ok || epoch != r.Epoch() {
		t.Fatalf("reader-seen holds %d (%v %v), want %d", epoch, ok, err, r.Epoch())
	}
	os.WriteFile(filepath.Join(dir, superName), old, 0o600)
	_, err = OpenReaderWith(dir, testPass, ReaderOptions{Remember: true, StateDir: state})
	wantErr(t, err, ErrIntegrity, "rolled back")
	if !strings.Contains(err.Error(), filepath.Join(state, readerSeenName)) {
		t.Fatalf("error does not say which file to delete to accept it: %v", err)
	}
	fresh := must(OpenReaderWith(dir, testPass, ReaderOptions{Remember: true, StateDir: t.TempDir()}))
	if fresh.Epoch() != oldEpoch {
		t.Fatalf("new state dir: epoch %d, want %d", fresh.Epoch(), oldEpoch)
	}
	_, err = OpenReaderWith(dir, testPass, ReaderOptions{Remember: true, StateDir: filepath.Join(dir, "st")})
	wantErr(t, err, ErrInvalid, "inside the synced backend folder")
}

// A writer's first epoch is numbered two past the backend's when the backend's last
// epoch changed the committed state (the writer does not know the state before it:
// nextEpoch), one past otherwise. A crash between such an epoch's superblock and `seen`
// is still recognised as this writer's own on the next start.
func TestWriterFirstEpochNumber(t *testing.T) {
	dir, state := newBackend(t, 8, 16<<10, 2), t.TempDir()
	w := openW(t, dir, state)
	f := must(w.Create(rootIno, "f", 0o644, 0, 0))
	must(w.Write(f.Ino, 0, []byte("hello")))
	drain(t, w, 50)
	busy := w.sb.Epoch
	if !w.sb.HasChange || w.sb.LastChange != busy {
		t.Fatalf("epoch %d committed f but the superblock says last change %d (%v)", busy, w.sb.LastChange, w.sb.HasChange)
	}
	if got := must(w.Sync()).Epoch; got != busy+1 { // a running writer: no gap
		t.Fatalf("running writer's epoch after %d: %d", busy, got)
	}
	w.Close()
	// The backend's last epoch (busy+1) changed nothing: no gap.
	w = openW(t, dir, state)
	if got := must(w.Sync()).Epoch; got != busy+2 {
		t.Fatalf("first epoch after an idle one (%d): %d, want %d", busy+1, got, busy+2)
	}
	must(w.Write(f.Ino, 0, []byte("world")))
	last := busy + 2 + uint64(drain(t, w, 50))
	if w.sb.Epoch != last || w.sb.LastChange != last {
		t.Fatalf("at epoch %d (want %d), last change %d", w.sb.Epoch, last, w.sb.LastChange)
	}
	w.Close()
	// The backend's last epoch changed the state: a gap. Then a crash before `seen`.
	w = openW(t, dir, state)
	seen := must(os.ReadFile(filepath.Join(state, seenName)))
	if got := must(w.Sync()).Epoch; got != last+2 {
		t.Fatalf("first epoch after a busy one (%d): %d, want %d", last, got, last+2)
	}
	w.Close()
	os.WriteFile(filepath.Join(state, seenName), seen, 0o600) // as if the crash came before `seen`
	w = openW(t, dir, state)
	if w.sb.Epoch != last+2 {
		t.Fatalf("reopened at epoch %d, want %d", w.sb.Epoch, last+2)
	}
	// A superblock without the field (an older writer's): assume it changed the state.
	w.sb.HasChange, w.sb.LastChange = false, 0
	if got := w.nextEpoch(); got != last+4 {
		t.Fatalf("first epoch after a superblock without last change (%d): %d, want %d", last+2, got, last+4)
	}
	w.Close()
	r := must(OpenReader(dir, testPass))
	buf := make([]byte, 10)
	if n, err := r.Read(f.Ino, 0, buf); err != nil || string(buf[:n]) != "world" {
		t.Fatalf("reader: %q %v", buf[:n], err)
	}
}
