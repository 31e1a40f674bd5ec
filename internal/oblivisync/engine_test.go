package oblivisync

import (
	"bytes"
	"testing"
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
	epochs := drain(t, w, 500)
	t.Logf("drained in %d epochs", epochs)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	want, got := snapshot(t, w), snapshot(t, r)
	if d := diffSnap(want, got); d != "" {
		t.Fatalf("reader differs:\n%s", d)
	}
	// partial overwrite of a synced file, truncate, and re-check.
	if _, err := w.Write(f.Ino, 100, []byte("XYZ")); err != nil {
		t.Fatal(err)
	}
	sz := uint64(20000)
	must(w.SetAttr(f.Ino, SetAttr{Size: &sz}))
	drain(t, w, 500)
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	want, got = snapshot(t, w), snapshot(t, r)
	if d := diffSnap(want, got); d != "" {
		t.Fatalf("reader differs after update:\n%s", d)
	}
}
