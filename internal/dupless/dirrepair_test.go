package dupless

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// asBeforeFolderRecords makes the folders paths what a veil older than session 14 left of
// the folders it made along the way: stored, with no record, and listed by no newest root.
// Each record is deleted as rm deletes one (kept as a version: the older snapshots that
// list it still read it).
func asBeforeFolderRecords(t *testing.T, c *Client, paths ...string) {
	t.Helper()
	unlock, err := c.lockRemoving(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		enc, err := c.keys.encPath(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.deleteRecord(ctx, enc, dirMetaName); err != nil {
			t.Fatal(err)
		}
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
}

// folderModes returns the mode List gives each folder of paths (0: it has no record; ls -l
// shows d?????????).
func folderModes(t *testing.T, c *Client, paths ...string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	for _, p := range paths {
		parent := filepath.Dir(p)
		if parent == "." {
			parent = ""
		}
		es, err := c.List(ctx, parent, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Path == p {
				out[p] = e.Mode
			}
		}
	}
	return out
}

// Folders an older veil made along the way have no record: check names them (no damage),
// RecordFolders gives each the record veil gives such a folder now (0755, the time of the
// repair) and leaves a folder that has one (here 0700, put from a local folder) as it is,
// and those a pending mv covers until it is finished; check is then clean.
func TestRecordFoldersOfAnOlderVeil(t *testing.T) {
	_, dev := newGateBE(t) // records written with conditions, as on the storage service
	c := dev()
	dir := t.TempDir()
	one := filepath.Join(dir, "one")
	write(t, one, []byte("one"))
	keep := filepath.Join(dir, "keep")
	write(t, filepath.Join(keep, "f"), []byte("f"))
	if err := os.Chmod(keep, 0o700); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, one, "a/b")
	mustPut(t, c, one, "m/n")
	mustPut(t, c, keep, "")
	asBeforeFolderRecords(t, dev(), "a", "a/b", "m", "m/n")
	all := []string{"a", "a/b", "m", "m/n", "keep"}
	if got := folderModes(t, dev(), all...); got["a"] != 0 || got["m/n"] != 0 || got["keep"] != fs.ModeDir|0o700 {
		t.Fatalf("folders of an older veil, ls -l: %v", got)
	}

	res, err := dev().Check(ctx, CheckOptions{})
	if want := []string{"a", "a/b", "m", "m/n"}; err != nil || len(res.Problems) != 0 || !reflect.DeepEqual(res.Unrecorded, want) {
		t.Fatalf("check: folders without a record %q, problems %v, %v; want %q and no problem", res.Unrecorded, res.Problems, err, want)
	}

	// A pending mv of m: m and what it holds are left until it is finished.
	encM, _ := c.keys.encPath("m")
	encZ, _ := c.keys.encPath("z")
	mark := moveMark(encM, encZ)
	if err := c.writeMark(ctx, "m", "z", mark, false); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Second)
	rep, err := dev().RecordFolders(ctx)
	if err != nil || !reflect.DeepEqual(rep.Recorded, []string{"a", "a/b"}) || !reflect.DeepEqual(rep.Pending, []string{"m", "m/n"}) {
		t.Fatalf("repair with a mv pending: %+v %v", rep, err)
	}
	if err := c.dropMarkIn(ctx, movesDir, mark); err != nil {
		t.Fatal(err)
	}
	rep, err = dev().RecordFolders(ctx)
	if err != nil || !reflect.DeepEqual(rep.Recorded, []string{"m", "m/n"}) || len(rep.Pending) != 0 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, err := dev().RecordFolders(ctx); err != nil || len(rep.Recorded)+len(rep.Pending) != 0 {
		t.Fatalf("repair again: %+v %v", rep, err)
	}

	res, err = dev().Check(ctx, CheckOptions{})
	if err != nil || len(res.Problems) != 0 || len(res.Unrecorded) != 0 {
		t.Fatalf("check after the repair: %+v %v", res, err)
	}
	got := folderModes(t, dev(), all...)
	for _, p := range all[:4] {
		if got[p] != fs.ModeDir|0o755 {
			t.Errorf("%s after the repair: %v, want drwxr-xr-x", p, got[p])
		}
	}
	if got["keep"] != fs.ModeDir|0o700 {
		t.Errorf("keep (recorded 0700) after the repair: %v", got["keep"])
	}
	es, err := dev().List(ctx, "", true)
	for _, e := range es {
		if e.Path == "a" && (e.ModTime.Before(start) || e.ModTime.After(time.Now())) {
			t.Errorf("a after the repair: time %v, want the repair's", e.ModTime)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := dev().Get(ctx, "a", out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(out, "b")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("get of a after the repair: a/b %v %v, want 0755", fi, err)
	}
}

// A folder's record that is stored although no root lists it (a command that did not
// finish wrote it; check reports it) is not written over by the repair either.
func TestRecordFoldersLeavesUnlistedRecord(t *testing.T) {
	be, dev := newGateBE(t)
	c := dev()
	one := filepath.Join(t.TempDir(), "one")
	write(t, one, []byte("one"))
	mustPut(t, c, one, "s")
	asBeforeFolderRecords(t, dev(), "s")
	enc, _ := c.keys.encPath("s")
	b := c.keys.sealRecord(&record{Type: typeDir, Mode: 0o700}, enc+"/"+dirMetaName)
	if err := be.Put(ctx, enc, dirMetaName, bytesReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if rep, err := dev().RecordFolders(ctx); err != nil || len(rep.Recorded) != 0 {
		t.Fatalf("repair: %+v %v, want nothing recorded", rep, err)
	}
	if got, err := c.getObject(ctx, enc, dirMetaName); err != nil || string(got) != string(b) {
		t.Fatalf("the unlisted record after the repair: %v, written over", err)
	}
}
