package dupless

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// damageRecord flips a byte of the record object of the stored file path (local backend
// rooted at root) and returns the object's file.
func damageRecord(t *testing.T, c *Client, root, path string) string {
	t.Helper()
	if err := c.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	encDir, encName, err := c.encFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(root, filepath.FromSlash(encDir), encName+keySuffix)
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// keptFiles returns the kept versions' object files of a local backend rooted at root.
func keptFiles(t *testing.T, root string) []string {
	t.Helper()
	kept, err := filepath.Glob(filepath.Join(root, ".veil", "versions", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

// damagedTree stores a (several chunks) and d/b, d/c in a fresh namespace.
func damagedTree(t *testing.T) (c *Client, root, dir string) {
	root = t.TempDir()
	c = newClient(t, newBackendAt(t, root), mle.LocalKeys{})
	dir = t.TempDir()
	write(t, filepath.Join(dir, "a"), randBytes(700<<10, 1))
	write(t, filepath.Join(dir, "d", "b"), randBytes(5000, 2))
	write(t, filepath.Join(dir, "d", "c"), randBytes(6000, 3))
	mustPut(t, c, dir+"/a", "")
	mustPut(t, c, dir+"/d", "")
	return c, root, dir
}

// statsPruneCheck runs stats, prune (no grace) and check, which must all finish; check
// reports want problems, the versions the snapshots list that are gone (stats counts
// files' only: missing).
func statsPruneCheck(t *testing.T, c *Client, missing int, want ...string) *PruneResult {
	t.Helper()
	if st, err := c.Stats(ctx); err != nil {
		t.Fatalf("stats: %v", err)
	} else if st.Missing != missing {
		t.Fatalf("stats: %+v, want %d versions missing", st, missing)
	}
	pr, err := c.Prune(ctx, 0, false)
	if err != nil {
		t.Fatalf("prune: %+v %v", pr, err)
	}
	res, err := c.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || len(res.Problems) != len(want) {
		t.Fatalf("check: %+v %v, want %v", res, err, want)
	}
	for i, p := range res.Problems {
		if !strings.HasPrefix(p.Path, want[i]+" (snapshot ") {
			t.Fatalf("check: %+v, want %v", res.Problems, want)
		}
	}
	return pr
}

// Found by review: rm of a file whose record object is damaged moved the object to the
// kept name of the version the root lists, although its bytes are not that version's;
// stats and prune then stopped for good on "kept version ... does not match its name".
// rm now keeps only the version the root lists: a damaged object is deleted, said so, and
// the version is one the storage lost (check names it; forget of its snapshots ends it).
func TestRemoveDamagedRecordKeepsNothing(t *testing.T) {
	c, root, dir := damagedTree(t)
	damageRecord(t, c, root, "a")
	sum, err := c.Remove(ctx, "a", false)
	if err != nil || sum.Files != 1 || sum.Damaged != 1 {
		t.Fatalf("rm of a damaged file: %+v %v", sum, err)
	}
	if kept := keptFiles(t, root); len(kept) != 0 {
		t.Fatalf("rm kept the damaged object as a version: %v", kept)
	}
	pr := statsPruneCheck(t, c, 1, "a")
	if pr.ChunksRemoved == 0 || pr.VersionsMissing != 1 {
		t.Fatalf("prune after rm of a damaged file: %+v", pr)
	}
	// A sound rm still keeps its version, and the rest reads.
	sum, err = c.Remove(ctx, "d/b", false)
	if err != nil || sum.Damaged != 0 || len(keptFiles(t, root)) != 1 {
		t.Fatalf("rm of a sound file: %+v %v %v", sum, err, keptFiles(t, root))
	}
	want, _ := os.ReadFile(filepath.Join(dir, "d", "c"))
	out := filepath.Join(t.TempDir(), "c")
	if sum, err := c.Get(ctx, "d/c", out); err != nil || sum.Err() != nil {
		t.Fatalf("d/c after prune: %v %v", err, sum.Err())
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("d/c after prune: not its content")
	}
}

// rm -r of a folder whose file and folder records are damaged: the same.
func TestRemoveTreeDamagedRecordsKeepsNothing(t *testing.T) {
	c, root, _ := damagedTree(t)
	damageRecord(t, c, root, "d/b")
	enc, _ := c.keys.encPath("d")
	f := filepath.Join(root, filepath.FromSlash(enc), dirMetaName)
	b, _ := os.ReadFile(f)
	b[len(b)/2] ^= 1
	os.WriteFile(f, b, 0o644)
	sum, err := c.Remove(ctx, "d", true)
	if err != nil || sum.Files != 2 || sum.Damaged != 2 {
		t.Fatalf("rm -r of a folder with damaged records: %+v %v", sum, err)
	}
	if kept := keptFiles(t, root); len(kept) != 1 { // d/c's
		t.Fatalf("kept versions: %v", kept)
	}
	statsPruneCheck(t, c, 1, "d", "d/b")
}

// put over a file whose record is damaged stores it anew and keeps nothing of the damaged
// object; mv of it refuses, moving nothing.
func TestPutAndMoveOverDamagedRecord(t *testing.T) {
	c, root, dir := damagedTree(t)
	damageRecord(t, c, root, "d/b")
	if err := c.Move(ctx, "d/b", "e"); err == nil || !strings.Contains(err.Error(), "d/b") {
		t.Fatalf("mv of a damaged file: %v", err)
	}
	if kept := keptFiles(t, root); len(kept) != 0 {
		t.Fatalf("mv kept the damaged object as a version: %v", kept)
	}
	write(t, filepath.Join(dir, "d", "b"), randBytes(5001, 4))
	mustPut(t, c, filepath.Join(dir, "d", "b"), "d")
	if kept := keptFiles(t, root); len(kept) != 0 {
		t.Fatalf("put kept the damaged object as a version: %v", kept)
	}
	statsPruneCheck(t, c, 1, "d/b")
	if err := c.Move(ctx, "d/b", "e"); err != nil {
		t.Fatalf("mv of the file put again: %v", err)
	}
	statsPruneCheck(t, c, 1, "d/b")
}

// A kept version whose object is damaged (by the storage, or by an rm of a veil before
// TestRemoveDamagedRecordKeepsNothing's fix) is damage check names, and stats and prune go
// on: prune deletes no chunk while it cannot read it (the chunks it refers to are
// unknown), and all of them once forget drops the snapshots listing it. Found by review:
// both stopped for good on "kept version ... does not match its name".
func TestDamagedVersionStopsNeitherPruneNorStats(t *testing.T) {
	root := t.TempDir()
	c := newClient(t, newBackendAt(t, root), mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x"), randBytes(300<<10, 5))
	mustPut(t, c, dir+"/x", "")
	if _, err := c.Remove(ctx, "x", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Forget(ctx, Policy{Last: 1}, false); err != nil { // x's chunks: unreferenced
		t.Fatal(err)
	}
	for i := range 2 {
		write(t, filepath.Join(dir, "f"), randBytes(200<<10, uint64(10+i)))
		mustPut(t, c, dir+"/f", "")
	}
	kept := keptFiles(t, root) // x's (listed by no snapshot) and f's first version
	if len(kept) != 2 {
		t.Fatalf("kept versions: %v", kept)
	}
	for _, f := range kept {
		b, _ := os.ReadFile(f)
		b[len(b)/2] ^= 1
		os.WriteFile(f, b, 0o644)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Damaged != 1 || st.Files != 1 || st.Versions != 1 {
		t.Fatalf("stats with a damaged version: %+v %v", st, err)
	}
	res, err := c.Check(ctx, CheckOptions{})
	if err != nil || res.VersionsDamaged != 1 || len(res.Problems) != 1 || !strings.HasPrefix(res.Problems[0].Path, "f (snapshot ") ||
		!strings.Contains(res.Problems[0].Err, "does not match its name") {
		t.Fatalf("check with a damaged version: %+v %v", res, err)
	}
	pr, err := c.Prune(ctx, 0, false)
	if err != nil || pr.VersionsDamaged != 1 || len(pr.Damaged) != 1 || pr.ChunksRemoved != 0 || pr.ChunksHeld == 0 || pr.VersionsRemoved != 1 {
		t.Fatalf("prune with a damaged version: %+v %v", pr, err)
	}
	out := filepath.Join(t.TempDir(), "f")
	if sum, err := c.Get(ctx, "f", out); err != nil || sum.Err() != nil {
		t.Fatalf("f after prune: %v %v", err, sum.Err())
	}
	if _, err := c.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	pr, err = c.Prune(ctx, 0, false)
	if err != nil || pr.VersionsDamaged != 0 || pr.ChunksHeld != 0 || pr.ChunksRemoved == 0 || pr.VersionsRemoved != 1 {
		t.Fatalf("prune after forget: %+v %v", pr, err)
	}
	if res, err := c.Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check after forget and prune: %+v %v", res, err)
	}
}
