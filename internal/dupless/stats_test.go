package dupless

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// stats adds up the newest tree and every kept version, counting shared chunks once.
func TestStats(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	if st, err := c.Stats(ctx); err != nil || st.Files != 0 || st.Snapshots != 0 {
		t.Fatalf("stats of nothing: %+v %v", st, err)
	}
	dir := t.TempDir()
	a := randBytes(600<<10, 1)
	write(t, filepath.Join(dir, "d", "a"), a)
	write(t, filepath.Join(dir, "d", "copy"), a) // same content: its chunk is shared
	os.Symlink("a", filepath.Join(dir, "d", "link"))
	mustPut(t, c, dir+"/d", "")
	write(t, filepath.Join(dir, "d", "a"), randBytes(100, 2))
	os.Chtimes(filepath.Join(dir, "d", "a"), time.Now(), time.Now().Add(time.Hour))
	mustPut(t, c, dir+"/d", "")
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Files: 2, Symlinks: 1, Dirs: 1, Bytes: 600<<10 + 100, Snapshots: 2, Versions: 3,
		VersionBytes: 2*(600<<10) + 100, Chunks: 2, StoredBytes: st.StoredBytes}
	if *st != want || st.StoredBytes < 600<<10 || st.StoredBytes > 600<<10+1000 {
		t.Fatalf("stats = %+v\nwant    %+v", *st, want)
	}
}
