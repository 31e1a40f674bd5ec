package dupless

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

func changeList(chs []Change) []string {
	var out []string
	for _, ch := range chs {
		s := ch.Symbol() + " " + ch.Path
		if ch.IsDir {
			s += "/"
		}
		out = append(out, s)
	}
	return out
}

// diff against the local folder, sync --dry-run changing nothing, sync making the stored
// folder exactly the local one (removed entries kept in history), and diff between
// snapshots.
func TestDiffAndSync(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a1"))
	write(t, filepath.Join(src, "b"), []byte("b1"))
	write(t, filepath.Join(src, "sub", "x"), []byte("x"))
	os.Symlink("a", filepath.Join(src, "link"))
	mustPut(t, c, src, "")
	write(t, filepath.Join(src, "a"), []byte("a2, longer"))
	os.Remove(filepath.Join(src, "b"))
	os.RemoveAll(filepath.Join(src, "sub"))
	write(t, filepath.Join(src, "new", "c"), []byte("c"))
	os.Remove(filepath.Join(src, "link"))
	os.Symlink("new/c", filepath.Join(src, "link"))
	// d itself has a new modification time (entries made and removed): sync writes its
	// record again. A diff between snapshots lists files and folders made or removed only.
	want := []string{"M d/a", "- d/b", "M d/link", "+ d/new/", "+ d/new/c", "- d/sub/", "- d/sub/x"}
	wantLocal := append([]string{"U d/"}, want...)
	chs, err := c.DiffLocal(ctx, src, "d")
	if err != nil || !reflect.DeepEqual(changeList(chs), wantLocal) {
		t.Fatalf("diff --local = %v %v\nwant %v", changeList(chs), err, wantLocal)
	}
	res, err := c.Sync(ctx, src, "", true)
	if err != nil || !reflect.DeepEqual(changeList(res.Changes), wantLocal) || res.Put != nil {
		t.Fatalf("sync --dry-run: %+v %v", res, err)
	}
	if chs, _ := c.DiffLocal(ctx, src, "d"); len(chs) != len(wantLocal) {
		t.Fatal("the dry run changed something")
	}
	snaps, _ := c.Snapshots(ctx)
	if res, err = c.Sync(ctx, src, "", false); err != nil || res.Removed != 2 {
		t.Fatalf("sync: %+v %v", res, err)
	}
	if after, _ := c.Snapshots(ctx); len(after) != len(snaps)+1 {
		t.Fatalf("sync left %d snapshots, want one", len(after)-len(snaps))
	}
	if chs, err := c.DiffLocal(ctx, src, "d"); err != nil || len(chs) != 0 {
		t.Fatalf("after sync, diff --local = %v %v", changeList(chs), err)
	}
	out := filepath.Join(t.TempDir(), "d")
	if sum, err := c.Get(ctx, "d", out); err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	if chs, err := c.DiffLocal(ctx, out, "d"); err != nil || len(chs) != 0 {
		t.Fatalf("the restored copy differs: %v %v", changeList(chs), err)
	}
	// What sync removed is still in history.
	if vs, err := c.Log(ctx, "d/sub/x"); err != nil || len(vs) != 2 || !vs[1].Deleted {
		t.Fatalf("log of a file sync removed: %+v %v", vs, err)
	}
	chs, err = c.Diff(ctx, "1", "latest", "d")
	if err != nil || !reflect.DeepEqual(changeList(chs), want) {
		t.Fatalf("diff 1 latest = %v %v\nwant %v", changeList(chs), err, want)
	}
	if chs, err = c.Diff(ctx, "1", "1", ""); err != nil || len(chs) != 0 {
		t.Fatalf("diff of a snapshot with itself: %v %v", chs, err)
	}
	// A file only touched (same content, new time) is a metadata change between snapshots.
	snaps, _ = c.Snapshots(ctx)
	before := fmt.Sprint(snaps[len(snaps)-1].Seq)
	os.Chtimes(filepath.Join(src, "a"), time.Now(), time.Now().Add(time.Hour))
	mustPut(t, c, src, "")
	if chs, err = c.Diff(ctx, before, "latest", ""); err != nil || !reflect.DeepEqual(changeList(chs), []string{"U d/a"}) {
		t.Fatalf("diff after a touch = %v %v", changeList(chs), err)
	}
	if _, err := c.Diff(ctx, "99", "latest", ""); err == nil {
		t.Fatal("diff with a snapshot that does not exist")
	}
}

// A sync whose put fails for a file removes nothing.
func TestSyncRemovesNothingWhenAFileFails(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "gone"), []byte("g"))
	mustPut(t, c, src, "")
	os.Remove(filepath.Join(src, "gone"))
	write(t, filepath.Join(src, "a"), []byte("a changed"))
	failing, _ := New(&failRecordPut{Backend: be}, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer failing.Close()
	res, err := failing.Sync(ctx, src, "", false)
	if err == nil || res.Removed != 0 {
		t.Fatalf("sync with a failing file: %+v %v", res, err)
	}
	if es, err := c.List(ctx, "d", false); err != nil || len(es) != 2 {
		t.Fatalf("after the failed sync d holds %+v %v; want a and gone", es, err)
	}
}

// Sync of an empty local folder (a mount that failed looks empty) while files are stored
// under it is refused, removing nothing; AllowEmpty removes them (found by a user
// walkthrough: 'veil sync' of an empty folder removed all 5,126 entries).
func TestSyncEmptyFolderRefused(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "docs")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "sub", "b"), []byte("b"))
	if _, err := c.Sync(ctx, src, "", false); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(src)
	os.Mkdir(src, 0o755)
	if _, err := c.Sync(ctx, src, "", false); !errors.Is(err, ErrSyncEmpty) {
		t.Fatalf("sync of an empty folder: %v, want ErrSyncEmpty", err)
	}
	if ents, err := c.List(ctx, "docs", false); err != nil || len(ents) != 2 {
		t.Fatalf("after the refused sync: %d entries (%v), want 2", len(ents), err)
	}
	res, err := c.SyncWith(ctx, src, "", SyncOptions{AllowEmpty: true})
	if err != nil || res.Removed == 0 {
		t.Fatalf("sync --allow-empty: %+v %v", res, err)
	}
	if ents, err := c.List(ctx, "docs", false); err != nil || len(ents) != 0 {
		t.Fatalf("after sync --allow-empty: %d entries (%v), want none", len(ents), err)
	}
}
