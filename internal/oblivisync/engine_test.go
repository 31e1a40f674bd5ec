package oblivisync

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/oblivisync/osynctest"
)

func TestEngineRoundTrip(t *testing.T) {
	dir := newBackend(t, 32, 16<<10, 3)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	d := must(w.Mkdir(rootIno, "docs", 0o755, 0, 0))
	f := must(w.Create(d.Ino, "a.txt", 0o644, 0, 0))
	data := bytes.Repeat([]byte("hello oblivious world "), 2000) // ~44 KB: several fragments
	if _, err := w.Write(f.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	must(w.Symlink(rootIno, "link", "docs/a.txt", 0, 0))
	drain(t, w, 500)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if d := osynctest.Diff(snapshot(t, w), snapshot(t, r)); d != "" {
		t.Fatalf("reader differs:\n%s", d)
	}
	// A partial overwrite of a synced fragment, then a truncate inside it.
	if _, err := w.Write(f.Ino, 100, []byte("XYZ")); err != nil {
		t.Fatal(err)
	}
	sz := uint64(20000)
	must(w.SetAttr(f.Ino, SetAttr{Size: &sz}))
	drain(t, w, 500)
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if d := osynctest.Diff(snapshot(t, w), snapshot(t, r)); d != "" {
		t.Fatalf("reader differs after update:\n%s", d)
	}
	buf := make([]byte, 5)
	must(r.Read(f.Ino, 98, buf))
	if want := append(data[98:100:100], 'X', 'Y', 'Z'); !bytes.Equal(buf, want) {
		t.Fatalf("read %q, want %q", buf, want)
	}
}

// TestEngineRandomWithCrashes runs a random workload against the writer and a reference
// directory, "crashing" the writer (closing its files without a checkpoint) and syncing
// a few epochs at random points; after draining, a fresh reader, the writer, and a new
// writer on a fresh state directory (remount from the backend alone) all match.
func TestEngineRandomWithCrashes(t *testing.T) {
	dir := newBackend(t, 160, 16<<10, 3)
	state, ref := t.TempDir(), t.TempDir()
	w := openW(t, dir, state)
	wl := osynctest.NewWorkload(42, 30<<10)
	for i := 0; i < 400; i++ {
		desc, err := wl.Step(osynctest.Dir(ref), fsTarget{w})
		if err != nil {
			t.Fatalf("step %d: %v (stats %+v)", i, err, w.Stats())
		}
		_ = desc
		switch {
		case i%37 == 36: // crash: no checkpoint, no Close
			w.closeFiles()
			w = openW(t, dir, state)
		default:
			if _, err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 == 49 {
			want := must(osynctest.Snapshot(ref))
			if d := osynctest.Diff(want, snapshot(t, w)); d != "" {
				t.Fatalf("after step %d writer differs from reference:\n%s", i, d)
			}
		}
	}
	drain(t, w, 3000)
	want := must(osynctest.Snapshot(ref))
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if d := osynctest.Diff(want, snapshot(t, r)); d != "" {
		t.Fatalf("reader differs from reference:\n%s", d)
	}
	w.Close()
	w2 := openW(t, dir, t.TempDir()) // no journal: state from the backend alone
	defer w2.Close()
	if d := osynctest.Diff(want, snapshot(t, w2)); d != "" {
		t.Fatalf("remount from backend differs from reference:\n%s", d)
	}
	if st := w2.Stats(); st.PendingInodes != 0 {
		t.Fatalf("fresh writer has pending work: %+v", st)
	}
	ents, _ := os.ReadDir(state)
	for _, e := range ents {
		if info, _ := e.Info(); e.Name() != "lock" && info.Size() > 1<<20 {
			t.Errorf("journal file %s is %d bytes after draining", e.Name(), info.Size())
		}
	}
}

// TestDrainReportsPending: a drain that runs out of time says what is left.
func TestDrainReportsPending(t *testing.T) {
	dir := newBackend(t, 8, 16<<10, 1)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	f := must(w.Create(rootIno, "big", 0o644, 0, 0))
	must(w.Write(f.Ino, 0, make([]byte, 100<<10)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := w.Drain(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "still pending") || !strings.Contains(err.Error(), "local journal") {
		t.Fatalf("got %v", err)
	}
	if err := w.Drain(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestReplaceKeepsOldVersionVisible: "write a temp file, rename it over the original"
// must not make the file vanish for readers while the new data is still pending.
func TestReplaceKeepsOldVersionVisible(t *testing.T) {
	dir := newBackend(t, 64, 16<<10, 1)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	old := must(w.Create(rootIno, "doc", 0o644, 0, 0))
	must(w.Write(old.Ino, 0, []byte("old version")))
	drain(t, w, 200)
	tmp := must(w.Create(rootIno, "doc.tmp", 0o644, 0, 0))
	newData := bytes.Repeat([]byte("new "), 20000) // 80 KB: ~10 fragments at k=1
	must(w.Write(tmp.Ino, 0, newData))
	if err := w.Rename(rootIno, "doc.tmp", rootIno, "doc", false); err != nil {
		t.Fatal(err)
	}
	r := must(OpenReader(dir, testPass))
	for i := 0; w.Stats().PendingInodes > 0; i++ {
		must(w.Sync())
		if err := r.Refresh(); err != nil {
			t.Fatal(err)
		}
		a, err := r.Lookup(rootIno, "doc")
		if err != nil {
			t.Fatalf("epoch %d: doc vanished for readers: %v", i, err)
		}
		buf := make([]byte, a.Size)
		n := must(r.Read(a.Ino, 0, buf))
		if got := string(buf[:n]); got != "old version" && !bytes.Equal(buf[:n], newData) {
			t.Fatalf("epoch %d: reader sees a mix: %q...", i, got[:min(20, len(got))])
		}
	}
	a := must(r.Lookup(rootIno, "doc"))
	if a.Ino != tmp.Ino || a.Size != uint64(len(newData)) {
		t.Fatalf("after drain reader sees %+v", a)
	}
}

// TestMoveIntoNewDirectoryStaysVisible: a synced file moved into a directory created in
// the same breath never disappears for readers, and a deep new tree appears at once.
func TestMoveIntoNewDirectoryStaysVisible(t *testing.T) {
	dir := newBackend(t, 64, 16<<10, 2)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	f := must(w.Create(rootIno, "f", 0o644, 0, 0))
	must(w.Write(f.Ino, 0, []byte("data")))
	drain(t, w, 100)
	parent := uint64(rootIno)
	for i := 0; i < 10; i++ {
		parent = must(w.Mkdir(parent, "d", 0o755, 0, 0)).Ino
	}
	if err := w.Rename(rootIno, "f", parent, "f", false); err != nil {
		t.Fatal(err)
	}
	must(w.Sync())
	r := must(OpenReader(dir, testPass))
	ino := uint64(rootIno)
	for i := 0; i < 10; i++ {
		a, err := r.Lookup(ino, "d")
		if err != nil {
			t.Fatalf("level %d of the new tree not visible after one epoch: %v", i, err)
		}
		ino = a.Ino
	}
	if _, err := r.Lookup(ino, "f"); err != nil {
		t.Fatalf("moved file not visible: %v", err)
	}
}

// An open file whose name is removed (unlink, or rename over it) stays readable and
// writable through the open handle until the last release, as POSIX wants; it used to
// fail with ENOENT at once. Its content never reaches readers.
func TestUnlinkWhileOpen(t *testing.T) {
	dir := newBackend(t, 16, 16<<10, 4)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	a := must(w.Create(rootIno, "scratch", 0o644, 0, 0))
	w.Hold(a.Ino)
	big := bytes.Repeat([]byte("0123456789"), 3000) // spans fragments, partly synced
	must(w.Write(a.Ino, 0, big))
	drain(t, w, 200)
	if err := w.Unlink(rootIno, "scratch"); err != nil {
		t.Fatal(err)
	}
	must(w.Write(a.Ino, int64(len(big)), []byte("more")))
	drain(t, w, 200)
	buf := make([]byte, len(big)+10)
	n, err := w.Read(a.Ino, 0, buf)
	if err != nil || string(buf[:n]) != string(big)+"more" {
		t.Fatalf("read after unlink: %d bytes, %v", n, err)
	}
	if at, err := w.GetAttr(a.Ino); err != nil || at.Size != uint64(len(big)+4) {
		t.Fatalf("getattr after unlink: %+v %v", at, err)
	}
	// Rename over an open file: the old content stays readable through its handle.
	b := must(w.Create(rootIno, "db", 0o644, 0, 0))
	w.Hold(b.Ino)
	must(w.Write(b.Ino, 0, []byte("old")))
	c := must(w.Create(rootIno, "db.tmp", 0o644, 0, 0))
	must(w.Write(c.Ino, 0, []byte("new")))
	if err := w.Rename(rootIno, "db.tmp", rootIno, "db", false); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Read(b.Ino, 0, buf); err != nil || string(buf[:n]) != "old" {
		t.Fatalf("replaced open file: %q %v", buf[:n], err)
	}
	w.Release(a.Ino)
	w.Release(b.Ino)
	if _, err := w.Read(a.Ino, 0, buf); !errors.Is(err, ErrNotExist) {
		t.Fatalf("after the last release: %v", err)
	}
	if _, err := w.Lookup(rootIno, "scratch"); !errors.Is(err, ErrNotExist) {
		t.Fatal("unlinked name still there")
	}
}

// TestMoveOutThenRmdirStaysVisible: a synced file being rewritten is moved out of
// its directory and the directory removed (`mv d/f f; rmdir d`). While the file's new
// data is still pending, readers must still find it (old version at d/f, or new at f):
// the directory's removal used to commit at once, orphaning the file's committed record,
// so it vanished for readers, and for a writer that takes over from the backend alone.
func TestMoveOutThenRmdirStaysVisible(t *testing.T) {
	dir := newBackend(t, 64, 16<<10, 1)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	d := must(w.Mkdir(rootIno, "d", 0o755, 0, 0))
	f := must(w.Create(d.Ino, "f", 0o644, 0, 0))
	must(w.Write(f.Ino, 0, []byte("old version")))
	drain(t, w, 200)
	newData := bytes.Repeat([]byte("new "), 20000) // 80 KB: ~10 epochs at k=1
	must(w.Write(f.Ino, 0, newData))
	if err := w.Rename(d.Ino, "f", rootIno, "f", false); err != nil {
		t.Fatal(err)
	}
	if err := w.Rmdir(rootIno, "d"); err != nil {
		t.Fatal(err)
	}
	r := must(OpenReader(dir, testPass))
	for i := 0; w.Stats().PendingInodes > 0; i++ {
		must(w.Sync())
		if err := r.Refresh(); err != nil {
			t.Fatal(err)
		}
		_, errNew := r.Lookup(rootIno, "f")
		var errOld error
		if da, err := r.Lookup(rootIno, "d"); err != nil {
			errOld = err
		} else {
			_, errOld = r.Lookup(da.Ino, "f")
		}
		if errNew != nil && errOld != nil {
			t.Fatalf("epoch %d (%d pending): the file is neither at d/f nor at f for readers", i, w.Stats().PendingInodes)
		}
	}
}
