package dupless

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// RemoveEach and MkdirEach are one command for all their paths: one tree root (one
// snapshot), and a path that fails stops none of the others (found by a user walkthrough:
// 'veil rm a b c' made a snapshot per path and stopped at the first failure).
func TestSeveralPathsOneSnapshot(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "docs")
	for _, n := range []string{"a", "b", "c", "sub/d"} {
		write(t, filepath.Join(src, n), []byte(n))
	}
	mustPut(t, c, src, "")
	count := func() int {
		s, err := c.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	n := count()
	done, err := c.RemoveEach(ctx, []string{"docs/a", "docs/missing", "docs/sub", "docs/b", "docs/a"}, false)
	if err != nil || len(done) != 5 {
		t.Fatalf("RemoveEach: %d results, %v", len(done), err)
	}
	for i, want := range []bool{true, false, false, true, false} { // the second docs/a: gone already
		if (done[i].Err == nil) != want || want && done[i].Summary.Files != 1 {
			t.Errorf("%s: %+v, %v; want removed %v", done[i].Path, done[i].Summary, done[i].Err, want)
		}
	}
	if !errors.Is(done[1].Err, storage.ErrNotFound) {
		t.Errorf("docs/missing: %v, want not found", done[1].Err)
	}
	if ls, err := c.List(ctx, "docs", false); err != nil || len(ls) != 2 || ls[0].Path != "docs/c" || ls[1].Path != "docs/sub" {
		t.Errorf("docs after rm: %+v, %v; want c and sub", ls, err)
	}
	if got := count(); got != n+1 {
		t.Fatalf("rm of 5 paths published %d snapshots, want 1", got-n)
	}

	done, err = c.MkdirEach(ctx, []string{"x/y", "docs/c/z", "w"})
	if err != nil || len(done) != 3 || done[0].Err != nil || done[1].Err == nil || done[2].Err != nil {
		t.Fatalf("MkdirEach: %+v, %v", done, err)
	}
	if got := count(); got != n+2 {
		t.Fatalf("mkdir of 3 paths published %d snapshots, want 1", got-n-1)
	}
}
