package oblivisync

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFolder copies a backend folder's files (a backup of it, or putting one back).
func copyFolder(t *testing.T, from, to string) {
	t.Helper()
	os.RemoveAll(to)
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, e := range must(os.ReadDir(from)) {
		b := must(os.ReadFile(filepath.Join(from, e.Name())))
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdoptAcceptsDeliberateRestore: a user restores the backend folder from a backup.
// The writer refuses it as a rollback, as it must (the cloud could have done it), but
// the error used to name no way forward, and adopt refused a rolled-back backend too:
// the state directory was stuck until the user found and deleted it by hand. Now the
// error names 'veil osync adopt --accept-rollback', which without the flag is still
// refused, and with it sets the state aside; the writer then starts from the restored
// folder.
func TestAdoptAcceptsDeliberateRestore(t *testing.T) {
	dir, state := newBackend(t, 8, 16<<10, 2), t.TempDir()
	backup := filepath.Join(t.TempDir(), "backup")
	w := openW(t, dir, state)
	f := must(w.Create(rootIno, "a", 0o600, 0, 0))
	must(w.Write(f.Ino, 0, []byte("in the backup")))
	drain(t, w, 50)
	copyFolder(t, dir, backup)
	must(w.Write(f.Ino, 0, []byte("after the backup")))
	drain(t, w, 50)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	copyFolder(t, backup, dir) // the deliberate restore
	_, err := OpenWriter(dir, testPass, Options{StateDir: state, UnsafeNoFsync: true})
	if !errors.Is(err, ErrIntegrity) || !errors.Is(err, ErrRolledBack) || !strings.Contains(err.Error(), "veil osync adopt --accept-rollback") {
		t.Fatalf("writer on a restored folder: %v; want a rollback error naming adopt --accept-rollback", err)
	}
	if _, err := Adopt(dir, testPass, state, ""); !errors.Is(err, ErrRolledBack) {
		t.Fatalf("adopt without --accept-rollback: %v; want the rollback refused", err)
	}
	rep, err := AdoptWith(dir, testPass, state, "", AdoptOptions{AcceptRollback: true})
	if err != nil || rep.SetAside == "" {
		t.Fatalf("adopt --accept-rollback: %+v %v", rep, err)
	}
	w = openW(t, dir, state)
	defer w.Close()
	buf := make([]byte, 64)
	n, err := w.Read(f.Ino, 0, buf)
	if err != nil || string(buf[:n]) != "in the backup" {
		t.Fatalf("after adopting the restored folder, a reads %q (%v); want the backup's content", buf[:n], err)
	}
	drain(t, w, 50)
	if _, err := AdoptWith(dir, testPass, state, "", AdoptOptions{AcceptRollback: true}); err == nil {
		t.Fatal("adopt --accept-rollback of a state that follows the backend: accepted")
	}
}

// TestSyncEpochsStopsOnCancel: 'veil osync sync --drain' ran every epoch to the end
// whatever Ctrl-C said (the context never reached it). It now stops between two epochs,
// and running it again syncs the rest.
func TestSyncEpochsStopsOnCancel(t *testing.T) {
	dir, state := newBackend(t, 8, 16<<10, 2), t.TempDir()
	w := openW(t, dir, state)
	f := must(w.Create(rootIno, "a", 0o600, 0, 0))
	data := make([]byte, 100<<10) // several epochs' worth
	for i := range data {
		data[i] = byte(i * 7)
	}
	must(w.Write(f.Ino, 0, data))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	st, err := SyncEpochs(ctx, dir, testPass, Options{StateDir: state, UnsafeNoFsync: true}, 0, true, 1000, func(EpochReport) {
		ran++
		cancel() // Ctrl-C during the first epoch
	})
	if !errors.Is(err, context.Canceled) || ran != 1 || st.PendingInodes == 0 {
		t.Fatalf("sync --drain cancelled in its first epoch: ran %d epochs, %d files pending, %v; want it stopped after 1, the rest pending", ran, st.PendingInodes, err)
	}
	st, err = SyncEpochs(context.Background(), dir, testPass, Options{StateDir: state, UnsafeNoFsync: true}, 0, true, 1000, nil)
	if err != nil || st.PendingInodes != 0 {
		t.Fatalf("sync --drain run again: %+v %v", st, err)
	}
	r := must(OpenReader(dir, testPass))
	got := make([]byte, len(data)+1)
	if n, err := r.Read(f.Ino, 0, got); err != nil || !bytes.Equal(got[:n], data) {
		t.Fatalf("after the second sync: read %d bytes, %v", n, err)
	}
}

// TestTamperedFileSaysWhatToDo: a backend file that fails authentication is named, and
// the error says what can be done about it (the file must be put back; nothing in veil
// repairs it): a user who met it had only "tampered or from another backend".
func TestTamperedFileSaysWhatToDo(t *testing.T) {
	dir, ino, data := syncedBackend(t)
	r := must(OpenReader(dir, testPass))
	for i, e := range r.sb.Written {
		if e > 0 {
			alterFile(t, filepath.Join(dir, blockName(uint32(i))), xorAt(5000))
		}
	}
	r, err := OpenReader(dir, testPass) // fails on a metadata page, or the read on data
	if err == nil {
		_, err = r.Read(ino, 0, make([]byte, len(data)))
	}
	wantErr(t, err, ErrIntegrity, "failed authentication (tampered or from another backend; put back an intact copy of it")
	if !strings.Contains(err.Error(), "backend file b0000") {
		t.Fatalf("the error does not name the file: %v", err)
	}
}
