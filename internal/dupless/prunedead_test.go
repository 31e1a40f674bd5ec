package dupless

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// A put that wrote its records over another one's and died before publishing (as in
// TestPutOverwrittenByDeadPutKeepsFiles): every reader takes the newest root's versions
// from the copies it kept, and running the surviving put again finds its files unchanged
// and writes nothing. Found by review: check then reported the file as damaged (exit 3)
// and prune stopped on it ("prune stops: it must see every record") for good, although
// the file reads as its snapshot lists it; no command of the user changed that short of
// changing or removing the file. Now both take the root's version from its kept copy, and
// prune keeps the chunks of the unfinished record too (its command may still publish).
func TestDeadOverwriteStopsNeitherPruneNorCheck(t *testing.T) {
	dev, srcA := deadOverwrite(t)
	mustPut(t, dev(), srcA, "") // "run that command again"
	res, err := dev().Check(ctx, CheckOptions{ReadData: true})
	if err != nil || len(res.Problems) != 0 {
		t.Fatalf("check after a dead put wrote over a file: %+v %v", res.Problems, err)
	}
	pr, err := dev().Prune(ctx, 0, false)
	if err != nil {
		t.Fatalf("prune after a dead put wrote over a file: %+v %v", pr, err)
	}
	everySnapshotRestores(t, dev(), srcA)
	out := filepath.Join(t.TempDir(), "out")
	if sum, err := dev().Get(ctx, "race", out); err != nil || sum.Err() != nil {
		t.Fatalf("newest after prune: %v %v", err, sum.Err())
	}
	for i := range 6 {
		name := fmt.Sprintf("f%02d", i)
		got, _ := os.ReadFile(filepath.Join(out, name))
		want, _ := os.ReadFile(filepath.Join(srcA, name))
		if !bytes.Equal(got, want) {
			t.Fatalf("race/%s after prune is not a's content", name)
		}
	}
	if res, err := dev().Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check after prune: %+v %v", res.Problems, err)
	}
	// The dead put's record still stands at its path: its chunks stay (its command may
	// yet publish).
	b := dev()
	b.opts.RootCheck = RootWarn
	if err := b.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		encDir, encName, err := b.encFile(fmt.Sprintf("race/f%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := b.readCurrent(ctx, encDir, encName+keySuffix) // what is at the path, listed or not
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range r.Chunks {
			if err := b.statChunk(ctx, &ch); err != nil {
				t.Fatalf("race/f%02d: a chunk of the record at its path was pruned: %v", i, err)
			}
		}
	}
}

// An rm that moved a file's record to its kept name and died before publishing its root
// (the service went away, or the command was killed): the newest root still lists the
// file, and get reads it from the kept copy. Found by review: check reported it deleted
// (exit 3) and prune stopped on it for good, and "run that command again" cannot help, as
// rm no longer finds the file. Both now read the root's version from its kept copy.
func TestDeadRemoveStopsNeitherPruneNorCheck(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	dev := func() *Client {
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	dir := t.TempDir()
	a := randBytes(700<<10, 1)
	write(t, filepath.Join(dir, "a"), a)
	write(t, filepath.Join(dir, "b"), randBytes(5000, 2))
	mustPut(t, dev(), dir+"/a", "")
	mustPut(t, dev(), dir+"/b", "")
	d := dev()
	d.be = &noRootBE{Backend: be}
	if _, err := d.Remove(ctx, "a", false); err == nil {
		t.Fatal("the rm published its root")
	}
	if res, err := dev().Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check after an rm that did not finish: %+v %v", res, err)
	}
	if pr, err := dev().Prune(ctx, 0, false); err != nil || pr.ChunksRemoved != 0 {
		t.Fatalf("prune after an rm that did not finish: %+v %v", pr, err)
	}
	got, err := getAt(t, be, master, func(*Client) error { return nil }, "a")
	if err != nil || !bytes.Equal(got, a) {
		t.Fatalf("a after prune: %v", err)
	}
	if res, err := dev().Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check after prune: %+v %v", res, err)
	}
}
