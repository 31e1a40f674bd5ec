package oblivisync

import (
	"fmt"
	"testing"
)

// olderWritersSync runs one epoch as a writer from before the superblock's tags would:
// its superblock has no tags, so its page table may use the room they need.
func olderWritersSync(t *testing.T, w *Writer) EpochReport {
	t.Helper()
	rep, err := w.sync(func() (*plan, error) {
		pl, err := w.prepare()
		if err != nil {
			return pl, err
		}
		pl.sb.HasTags, pl.sb.Tags = false, nil
		w.packPages(pl.es, pl.sb, pl.commits)
		if len(pl.commits) > 0 {
			pl.sb.LastChange = pl.sb.Epoch
		}
		return pl, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A backend written before the tags whose page table leaves no room for them (though its
// N does): the writer must keep committing metadata (without tags), not hold every page
// back forever.
func TestOlderBackendPageTableLeavesNoRoomForTags(t *testing.T) {
	dir, state := newBackend(t, 240, 4096, 24), t.TempDir()
	w := openW(t, dir, state)
	for i := 0; i < 500; i++ {
		must(w.Create(rootIno, fmt.Sprintf("f%03d", i), 0o644, 0, 0))
	}
	for i := 0; ; i++ {
		if i == 400 {
			t.Fatal("older writer did not drain")
		}
		if olderWritersSync(t, w).PendingInodes == 0 {
			break
		}
	}
	if w.sb.HasTags || w.sb.size()+superTagsLen(240) <= w.be.g.plain {
		t.Fatalf("setup: tags %v, size %d", w.sb.HasTags, w.sb.size())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = openW(t, dir, state)
	must(w.Create(rootIno, "new", 0o644, 0, 0))
	drain(t, w, 50)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := must(OpenReader(dir, testPass))
	if len(snapshot(t, r)) != 501 {
		t.Fatalf("reader sees %d entries", len(snapshot(t, r)))
	}
}
