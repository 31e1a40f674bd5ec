package dupless

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/testutil"
)

// A case-only rename on a local disk that ignores case (vfat, exFAT, NTFS, macOS) is a
// rename for sync: the stored folder then holds the new name only. Sync took the old name
// for local again (Lstat("Report.txt") finds "report.txt" there) and kept both, for a file
// and for a folder. Found by the notes since session 13; a FUSE view that ignores case
// stands in for such a disk.
func TestSyncCaseOnlyRenameOnCaseInsensitiveDisk(t *testing.T) {
	backing, mnt := t.TempDir(), filepath.Join(t.TempDir(), "docs")
	write(t, filepath.Join(backing, "Report.txt"), []byte("r"))
	write(t, filepath.Join(backing, "Sub", "x.txt"), []byte("x"))
	testutil.MountCaseInsensitive(t, backing, mnt)
	if _, err := os.Lstat(filepath.Join(mnt, "REPORT.TXT")); err != nil {
		t.Fatalf("the view does not ignore case: %v", err)
	}
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	if _, err := c.Sync(ctx, mnt, "", false); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(backing, "Report.txt"), filepath.Join(backing, "report.txt"))
	os.Rename(filepath.Join(backing, "Sub"), filepath.Join(backing, "sub"))
	res, err := c.Sync(ctx, mnt, "", false)
	if err != nil || res.Removed != 2 {
		t.Fatalf("sync after case-only renames: removed %d, %v (changes %v)", res.Removed, err, changeList(res.Changes))
	}
	var names []string
	for _, p := range []string{"docs", "docs/sub"} {
		es, err := c.List(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			names = append(names, e.Path)
		}
	}
	if want := []string{"docs/report.txt", "docs/sub", "docs/sub/x.txt"}; !reflect.DeepEqual(names, want) {
		t.Errorf("stored after the sync: %q, want %q", names, want)
	}
	if chs, err := c.DiffLocal(ctx, mnt, "docs"); err != nil || len(chs) != 0 {
		t.Errorf("diff --local after the sync: %v %v", changeList(chs), err)
	}
}
