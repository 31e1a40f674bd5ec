package dupless

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"golang.org/x/sys/unix"
)

// A sync's dry run lists exactly what the sync then changes: every entry of the tree root
// the sync adds, rewrites or removes, folder records included (a folder's mode or
// modification time, a folder made above the destination). Found by the notes since
// session 13: the dry run listed files only, and the sync rewrote folders' records unlisted.
func TestSyncDryRunListsWhatSyncDoes(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a", "b", "f"), []byte("f"))
	write(t, filepath.Join(src, "c", "g"), []byte("g"))
	write(t, filepath.Join(src, "h"), []byte("h"))
	os.MkdirAll(filepath.Join(src, "e"), 0o755)
	os.Symlink("h", filepath.Join(src, "link"))
	past := time.Now().Add(-time.Hour)
	steps := []func(){
		func() {}, // the first sync: everything, and Backup/ and Backup/x/ above it
		func() {}, // nothing changed: nothing listed, nothing done
		func() { // folders' modes and times only
			os.Chmod(filepath.Join(src, "c"), 0o700)
			os.Chtimes(filepath.Join(src, "a", "b"), past, past)
		},
		func() { // a file touched, one removed, a folder removed, one made, a link's time
			os.Chtimes(filepath.Join(src, "h"), past, past)
			os.Remove(filepath.Join(src, "c", "g"))
			os.Remove(filepath.Join(src, "e"))
			write(t, filepath.Join(src, "n", "m"), []byte("m"))
			lchtimes(t, filepath.Join(src, "link"), past)
		},
	}
	for i, step := range steps {
		step()
		res, err := c.Sync(ctx, src, "Backup/x", true)
		if err != nil {
			t.Fatalf("step %d: dry run: %v", i, err)
		}
		listed := changeClasses(res.Changes)
		before := rootEntries(c)
		if _, err := c.Sync(ctx, src, "Backup/x", false); err != nil {
			t.Fatalf("step %d: sync: %v", i, err)
		}
		if done := c.rootChanges(before, rootEntries(c)); !reflect.DeepEqual(listed, done) {
			t.Errorf("step %d: the dry run listed %q\nthe sync changed     %q", i, listed, done)
		}
		if i == 2 && !reflect.DeepEqual(listed, []string{"~ Backup/x/d/a/b/", "~ Backup/x/d/c/"}) {
			t.Errorf("step %d: listed %q, want the two folders", i, listed)
		}
	}
}

// lchtimes sets a symlink's own modification time.
func lchtimes(t *testing.T, path string, when time.Time) {
	t.Helper()
	ts := unix.NsecToTimespec(when.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
}

// changeClasses is a listing as "+ path", "- path" and "~ path" (modified or metadata:
// a root tells only that the record changed), folders with a trailing slash, sorted.
func changeClasses(chs []Change) []string {
	out := []string{}
	for _, ch := range chs {
		s := map[string]string{"added": "+", "removed": "-"}[ch.Kind]
		if s == "" {
			s = "~"
		}
		s += " " + ch.Path
		if ch.IsDir {
			s += "/"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func rootEntries(c *Client) map[string][32]byte {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	out := map[string][32]byte{}
	if c.view.root != nil {
		for p, h := range c.view.root.Entries {
			out[p] = h
		}
	}
	return out
}

// rootChanges is what changed from root entries a to b, as changeClasses writes a listing:
// a folder's record (.dir) stands for the folder.
func (c *Client) rootChanges(a, b map[string][32]byte) []string {
	out := []string{}
	name := func(p string) string {
		if isDirMeta(p) {
			dir, _ := storage.Split(p)
			return c.plainDir(dir) + "/"
		}
		return c.describe(p)
	}
	for p, ha := range a {
		if strings.HasPrefix(p, veilDir+"/") {
			continue
		}
		if hb, ok := b[p]; !ok {
			out = append(out, "- "+name(p))
		} else if ha != hb {
			out = append(out, "~ "+name(p))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok && !strings.HasPrefix(p, veilDir+"/") {
			out = append(out, "+ "+name(p))
		}
	}
	sort.Strings(out)
	return out
}
