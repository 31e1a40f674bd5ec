package dupless

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage/local"
)

// chunkObjects returns the chunk object files of a local backend rooted at root.
func chunkObjects(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, ".veil", "chunks", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// check reports damage per file: a missing chunk without reading data, an altered one
// only with --read-data, a damaged kept version by its snapshot; a sound tree has none.
func TestCheckFindsDamagePerFile(t *testing.T) {
	root := t.TempDir()
	be := newBackendAt(t, root)
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), randBytes(600<<10, 1))
	write(t, filepath.Join(dir, "b"), randBytes(10<<10, 2))
	mustPut(t, c, dir+"/a", "")
	mustPut(t, c, dir+"/b", "")
	write(t, filepath.Join(dir, "b"), randBytes(12<<10, 3))
	os.Chtimes(filepath.Join(dir, "b"), time.Now(), time.Now().Add(time.Hour))
	mustPut(t, c, dir+"/b", "")

	res, err := c.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || len(res.Problems) != 0 || res.Files != 2 || res.Versions != 1 || res.Chunks != 3 || res.ChunksRead != 3 {
		t.Fatalf("check of a sound tree: %+v %v", res, err)
	}
	// Alter one byte of every chunk of a (same size): only reading finds it.
	recA, err := c.Log(ctx, "a")
	if err != nil || len(recA) != 1 {
		t.Fatal(recA, err)
	}
	var aChunk string
	for _, f := range chunkObjects(t, root) {
		if fi, _ := os.Stat(f); fi.Size() > 100<<10 {
			aChunk = f
		}
	}
	b, _ := os.ReadFile(aChunk)
	b[len(b)/2] ^= 1
	os.WriteFile(aChunk, b, 0o644)
	if res, err := c.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 || res.ChunksRead != 0 {
		t.Fatalf("check without reading data: %+v %v", res, err)
	}
	res, err = c.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || len(res.Problems) != 1 || res.Problems[0].Path != "a" || !strings.Contains(res.Problems[0].Err, "integrity") {
		t.Fatalf("check --read-data of an altered chunk: %+v %v", res, err)
	}
	// A missing chunk is found without reading.
	os.Remove(aChunk)
	res, err = c.Check(ctx, CheckOptions{})
	if err != nil || len(res.Problems) != 1 || res.Problems[0].Path != "a" || !strings.Contains(res.Problems[0].Err, "missing") {
		t.Fatalf("check of a missing chunk: %+v %v", res, err)
	}
	// A damaged kept version is reported with its snapshot.
	kept, _ := filepath.Glob(filepath.Join(root, ".veil", "versions", "*", "*"))
	if len(kept) != 1 {
		t.Fatalf("kept versions: %v", kept)
	}
	os.WriteFile(kept[0], []byte("not a record"), 0o644)
	res, err = c.Check(ctx, CheckOptions{})
	if err != nil || len(res.Problems) != 2 || !strings.HasPrefix(res.Problems[1].Path, "b (snapshot ") {
		t.Fatalf("check of a damaged kept version: %+v %v", res, err)
	}
	if _, err := c.Check(ctx, CheckOptions{Subset: 1.5}); err == nil {
		t.Fatal("subset 1.5 accepted")
	}
}

func newBackendAt(t *testing.T, root string) *local.Backend {
	be, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// A folder's record replaced by a later put (its mode changed) is kept as a version like a
// file's; check reads it. Found by review: check skipped every folder record of the
// snapshots, so a damaged or missing one was "no damage" (exit 0) while get --snapshot of
// the folder failed on it.
func TestCheckReadsFolderVersions(t *testing.T) {
	root := t.TempDir()
	be := newBackendAt(t, root)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "d", "a"), []byte("a"))
	mustPut(t, c, dir+"/d", "")
	os.Chmod(filepath.Join(dir, "d"), 0o700)
	mustPut(t, c, dir+"/d", "")
	kept, _ := filepath.Glob(filepath.Join(root, ".veil", "versions", "*", "*"))
	if len(kept) != 1 {
		t.Fatalf("kept versions: %v", kept)
	}
	res, err := c.Check(ctx, CheckOptions{})
	if err != nil || len(res.Problems) != 0 || res.Versions != 1 || res.VersionsMissing != 0 {
		t.Fatalf("check of a sound tree: %+v %v", res, err)
	}
	os.WriteFile(kept[0], []byte("not a record"), 0o644)
	if _, err := getAt(t, be, master, func(c *Client) error { _, err := c.PinSnapshot(ctx, 1); return err }, "d"); err == nil {
		t.Fatal("get --snapshot 1 of the folder read a damaged version")
	}
	res, err = c.Check(ctx, CheckOptions{})
	if err != nil || len(res.Problems) != 1 || res.Problems[0].Path != "d (snapshot 1)" {
		t.Fatalf("check of a damaged folder version: %+v %v", res, err)
	}
	os.Remove(kept[0])
	// Missing is damage too (found by a user walkthrough: "not kept", no damage, exit 0).
	if res, err = c.Check(ctx, CheckOptions{}); err != nil || res.VersionsMissing != 1 || len(res.Problems) != 1 ||
		res.Problems[0].Path != "d (snapshot 1)" {
		t.Fatalf("check of a missing folder version: %+v %v", res, err)
	}
}

// A version a snapshot lists that the storage no longer has is damage (found by a user
// walkthrough: check called it "not kept (replaced before veil kept versions)" and exited
// 0). Where the roots show that the veil which replaced it kept versions, check says the
// storage service lost it; where a veil older than kept versions may have replaced it (the
// lowest roots of a namespace such a veil wrote, which kept only its newest few), it says
// so, and it is a problem still.
func TestCheckMissingVersionIsDamage(t *testing.T) {
	// puts stores n versions of one file; kept[i] is the kept copy of the version root
	// i+1 replaced (the one root i listed last).
	puts := func(t *testing.T, n int) (*Client, string, map[int]string) {
		root := t.TempDir()
		c := newClient(t, newBackendAt(t, root), mle.LocalKeys{})
		dir := t.TempDir()
		kept, seen := map[int]string{}, map[string]bool{}
		for i := 1; i <= n; i++ {
			write(t, filepath.Join(dir, "f"), []byte(strings.Repeat("v", i)))
			mustPut(t, c, filepath.Join(dir, "f"), "")
			files, _ := filepath.Glob(filepath.Join(root, ".veil", "versions", "*", "*"))
			for _, f := range files {
				if !seen[f] {
					seen[f], kept[i-1] = true, f
				}
			}
		}
		if res, err := c.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 || res.Snapshots != n {
			t.Fatalf("check of a sound history: %+v %v", res, err)
		}
		return c, root, kept
	}
	only := func(t *testing.T, c *Client, path string, want error) {
		t.Helper()
		res, err := c.Check(ctx, CheckOptions{})
		if err != nil || res.VersionsMissing != 1 || len(res.Problems) != 1 || res.Problems[0].Path != path ||
			res.Problems[0].Err != want.Error() {
			t.Fatalf("check: %+v %v, want %s: %v", res, err, path, want)
		}
	}
	t.Run("lost", func(t *testing.T) {
		c, _, kept := puts(t, 5)
		// Root 3 replaced it: within a fresh namespace's first 3 roots, which an older
		// veil may have written, but version 1 kept by root 2 shows this veil wrote them.
		os.Remove(kept[2])
		only(t, c, "f (snapshot 2)", ErrVersionLost)
		os.Remove(kept[1])
		os.Remove(kept[3])
		res, _ := c.Check(ctx, CheckOptions{})
		if len(res.Problems) != 3 || res.VersionsMissing != 3 {
			t.Fatalf("three versions lost: %+v", res)
		}
	})
	t.Run("older veil", func(t *testing.T) {
		c, root, kept := puts(t, 8)
		for s := uint64(1); s <= 5; s++ { // as a veil before kept versions deleted old roots
			os.Remove(filepath.Join(root, ".veil", "roots", rootName(s)))
		}
		os.Remove(kept[6]) // listed last by root 6, replaced by root 7: maybe by the older veil
		only(t, c, "f (snapshot 6)", ErrVersionGone)
	})
}
