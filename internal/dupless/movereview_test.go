package dupless

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// A killed mv moved some files (unpublished) and deleted them from the source; another
// device then stored a new file at one of those source paths. The rerun keeps the new
// file in the source and reports it, and the moved one, at the destination, must be
// listed by its root: found by review, no root listed it (ls, get and check did not see
// it, and once the new source file was removed no rerun ever adopted it).
func TestMoveRerunAfterPutIntoSourceListsMoved(t *testing.T) {
	fastRetries(t)
	for left := int64(4); left < 40; left++ {
		next, want, moved := killedMoveThenPut(t, left, "tree")
		if next == nil {
			continue
		}
		if err := next.Move(ctx, "tree", "moved"); err == nil {
			t.Fatalf("mv again over a file stored anew: no error")
		}
		out := filepath.Join(t.TempDir(), "out")
		if _, err := next.Get(ctx, "moved/"+moved, out); err != nil {
			t.Fatalf("killed after %d changes, moved/%s: %v", left, moved, err)
		}
		if b, _ := os.ReadFile(out); string(b) != want[moved] {
			t.Fatalf("moved/%s = %q, want %q", moved, b, want[moved])
		}
		if res, err := next.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
			t.Fatalf("check: %+v %v", res, err)
		}
		if _, err := next.List(ctx, "tree/"+moved, false); errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("no kill point left a moved file")
}

// mv --resume of a folder x into y, where x holds a folder a and y a file a: the folder
// stays in x, reported, and nothing is stored below the file y/a (found by review: the
// folder was moved below it, a stored file and folder of one name, which check reports).
func TestResumeMoveFolderOntoFile(t *testing.T) {
	be := newBackend(t)
	c, _, _ := moveTreeFixture(t, be, Options{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "a", "f"), []byte("folder's file"))
	write(t, filepath.Join(dir, "x", "b"), []byte("b"))
	write(t, filepath.Join(dir, "y", "a"), []byte("a file"))
	mustPut(t, c, filepath.Join(dir, "x"), "")
	mustPut(t, c, filepath.Join(dir, "y"), "")
	err := c.ResumeMove(ctx, "x", "y")
	if err == nil {
		t.Fatal("resume of a folder onto a file: no error")
	}
	t.Log(err)
	if res, err := c.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check: %+v %v", res, err)
	}
	storedAre(t, c, map[string]string{"x/a/f": "folder's file", "y/a": "a file", "y/b": "b"})
}

// The reverse: x holds a file a, y a folder a; the file stays in x.
func TestResumeMoveFileOntoFolder(t *testing.T) {
	be := newBackend(t)
	c, _, _ := moveTreeFixture(t, be, Options{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "a"), []byte("a file"))
	write(t, filepath.Join(dir, "y", "a", "f"), []byte("folder's file"))
	mustPut(t, c, filepath.Join(dir, "x"), "")
	mustPut(t, c, filepath.Join(dir, "y"), "")
	if err := c.ResumeMove(ctx, "x", "y"); err == nil {
		t.Fatal("resume of a file onto a folder: no error")
	}
	if res, err := c.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check: %+v %v", res, err)
	}
	out := filepath.Join(t.TempDir(), "o")
	if _, err := c.Get(ctx, "x/a", out); err != nil {
		t.Fatal(err)
	}
}

// mv --resume a/b a (or mv a/b a, whose error named that command) would move a/b's
// entries into a, a/b/b's into a/b itself: a folder holding src is refused, nothing
// moved (found by review: the folder a/b kept gaining what it lost, every rerun failed).
func TestMoveIntoFolderHoldingSource(t *testing.T) {
	be := newBackend(t)
	c, _, _ := moveTreeFixture(t, be, Options{})
	for _, resume := range []bool{false, true} {
		err := c.move(ctx, "tree/d", "tree", resume)
		if err == nil || !strings.Contains(err.Error(), "holds it") || strings.Contains(err.Error(), "--resume") {
			t.Fatalf("mv tree/d tree (resume %v): %v", resume, err)
		}
	}
	if _, err := c.List(ctx, "tree/d/f/g", false); err != nil {
		t.Fatal(err)
	}
}

// An interrupted mv whose rerun is killed too finishes on the third run, wherever the two
// were killed: every file once at the destination, check clean, no mark left.
func TestMoveRerunKilledTwice(t *testing.T) {
	fastRetries(t)
	for first := int64(3); first < 20; first += 4 {
		for second := int64(0); ; second++ {
			be := &killBE{Backend: newBackend(t)}
			c, master, want := moveTreeFixture(t, be, Options{Jobs: 2})
			be.left.Store(first)
			be.armed.Store(true)
			if err := c.Move(ctx, "tree", "moved"); err == nil {
				t.Fatalf("not killed after %d changes", first)
			}
			be.armed.Store(false)
			next, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 2})
			next.BreakLocks(ctx)
			be.left.Store(second)
			be.armed.Store(true)
			err := next.Move(ctx, "tree", "moved")
			be.armed.Store(false)
			next.Close()
			if err == nil {
				checkMovedOnce(t, be, master, want)
				break
			}
			third, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 2})
			third.BreakLocks(ctx)
			if err := third.Move(ctx, "tree", "moved"); err != nil {
				t.Fatalf("killed after %d then %d changes: third mv: %v", first, second, err)
			}
			third.Close()
			checkMovedOnce(t, be, master, want)
		}
	}
}

// A killed mv moved a file (unpublished); another device then stored a new file at its
// place in the destination. The rerun puts the moved file back in the source, from its
// kept version, and reports it kept there (found by review: the rerun said it was done,
// and the file, still listed below the source, was in no folder ls showed).
func TestMoveRerunAfterPutIntoDestKeepsSource(t *testing.T) {
	fastRetries(t)
	for left := int64(4); left < 40; left++ {
		next, want, moved := killedMoveThenPut(t, left, "moved")
		if next == nil {
			continue
		}
		err := next.Move(ctx, "tree", "moved")
		if err == nil || !strings.Contains(err.Error(), "tree/"+moved) {
			t.Fatalf("killed after %d changes, mv again with moved/%s stored anew: %v", left, moved, err)
		}
		ents, err := next.List(ctx, filepath.Dir(filepath.Join("tree", moved)), false)
		if err != nil || len(ents) == 0 {
			t.Fatalf("ls of tree/%s's folder: %v %v", moved, ents, err)
		}
		storedAre(t, next, map[string]string{"tree/" + moved: want[moved], "moved/" + moved: "newer"})
		if res, err := next.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
			t.Fatalf("check: %+v %v", res, err)
		}
		return
	}
	t.Fatal("no kill point left a moved file")
}

// A file's mv killed between its two steps, then another device stores a new version of
// the source: the rerun refuses the destination as existing, and the destination, which
// holds the source's old version, is listed (found by review: it was listed by no root,
// its reads said to run the command again, and that said it exists).
func TestFileMoveRerunAfterSourceStoredAnew(t *testing.T) {
	fastRetries(t)
	for left := int64(0); left < 12; left++ {
		be := &killBE{Backend: newBackend(t)}
		c, master, want := moveTreeFixture(t, be, Options{})
		err := be.moveKilled(c, left, "tree/a", "tree/z")
		if err == nil {
			t.Fatal("no kill point between the two steps")
		}
		other, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
		other.BreakLocks(ctx)
		dd, dn, _ := other.encFile("tree/z")
		sd, sn, _ := other.encFile("tree/a")
		_, zerr := be.Stat(ctx, dd, dn+keySuffix)
		_, aerr := be.Stat(ctx, sd, sn+keySuffix)
		if zerr != nil || aerr != nil {
			other.Close()
			continue
		}
		local := filepath.Join(t.TempDir(), "a")
		write(t, local, []byte("newer"))
		mustPut(t, other, local, "tree")
		other.Close()

		next, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
		defer next.Close()
		if err := next.Move(ctx, "tree/a", "tree/z"); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("mv again: %v", err)
		}
		storedAre(t, next, map[string]string{"tree/a": "newer", "tree/z": want["a"]})
		if res, err := next.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
			t.Fatalf("check: %+v %v", res, err)
		}
		return
	}
	t.Fatal("no kill point between the two steps")
}

// mv of a file onto a stored file with the same record (same content, time and mode) is
// refused as onto any other file, and the source stays (found by review: taken for an mv
// cut off between its two steps, the source was removed and the mv said it was done).
func TestFileMoveOntoIdenticalFileRefused(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	dir := t.TempDir()
	for _, p := range []string{"x/f", "y/f"} {
		write(t, filepath.Join(dir, p), []byte("same"))
		if err := os.Chtimes(filepath.Join(dir, p), time.Unix(1e9, 0), time.Unix(1e9, 0)); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, c, filepath.Join(dir, "x"), "")
	mustPut(t, c, filepath.Join(dir, "y"), "")
	if err := c.Move(ctx, "x/f", "y/f"); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("mv onto an identical file: %v", err)
	}
	if es, err := c.List(ctx, "x/f", false); err != nil || len(es) != 1 {
		t.Fatalf("x/f after the refused mv: %v %v", es, err)
	}
}

// cancelBE cancels a context once a record (.key) is stored, while armed.
type cancelBE struct {
	storage.Backend
	armed  atomic.Bool
	cancel func()
}

func (b *cancelBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	err := b.Backend.Put(ctx, d, n, r, s)
	if err == nil && strings.HasSuffix(n, keySuffix) && b.armed.Swap(false) {
		b.cancel()
	}
	return err
}

// Move and Delete fail on a cancelled context, as a request to a remote service does.
func (b *cancelBE) Move(ctx context.Context, sd, sn, dd, dn string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.Backend.Move(ctx, sd, sn, dd, dn)
}

func (b *cancelBE) Delete(ctx context.Context, d, n string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.Backend.Delete(ctx, d, n)
}

// A file's mv interrupted (Ctrl-C) once its new record is written still removes the old
// one: it never publishes both, which a rerun would take for two files.
func TestFileMoveCancelledBetweenSteps(t *testing.T) {
	be := &cancelBE{Backend: newBackend(t)}
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "f"), []byte("f"))
	mustPut(t, c, filepath.Join(dir, "x"), "")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	be.cancel = cancel
	be.armed.Store(true)
	if err := c.Move(cctx, "x/f", "x/g"); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := c.Move(ctx, "x/f", "x/g"); err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("mv again: %v", err)
	}
	if _, err := c.List(ctx, "x/f", false); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("x/f after the mv: %v", err)
	}
	if es, err := c.List(ctx, "x/g", false); err != nil || len(es) != 1 {
		t.Fatalf("x/g: %v %v", es, err)
	}
}

// killedMoveThenPut kills 'mv tree moved' (moveTreeFixture's tree, one file at a time)
// after left storage changes, then has another device of an older veil (which does not
// read move marks: asOlderVeil) store "newer" at the place, below
// side ("tree" or "moved"), of a file the killed mv had moved: a fresh client (nil when
// this kill point moved no file), the tree's contents and the moved file's path below
// the two folders.
func killedMoveThenPut(t *testing.T, left int64, side string) (*Client, map[string]string, string) {
	t.Helper()
	be := &killBE{Backend: newBackend(t)}
	c, master, want := moveTreeFixture(t, be, Options{Jobs: 1})
	err := be.moveKilled(c, left, "tree", "moved")
	if err == nil {
		t.Fatalf("no kill point moved a file without finishing")
	}
	other, err := New(be, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.BreakLocks(ctx)
	moved := ""
	for rel := range want {
		if _, err := other.List(ctx, "tree/"+rel, false); err == nil {
			continue
		}
		dd, dn, _ := other.encFile("moved/" + rel)
		if _, err := be.Stat(ctx, dd, dn+keySuffix); err == nil {
			moved = rel
			break
		}
	}
	if moved == "" {
		return nil, nil, ""
	}
	local := filepath.Join(t.TempDir(), filepath.Base(moved))
	write(t, local, []byte("newer"))
	asOlderVeil(t, be, func() { mustPut(t, other, local, filepath.Dir(filepath.Join(side, moved))) })
	next, err := New(be, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(next.Close)
	return next, want, moved
}

// storedAre checks that c reads each stored path as its content in want.
func storedAre(t *testing.T, c *Client, want map[string]string) {
	t.Helper()
	for path, w := range want {
		out := filepath.Join(t.TempDir(), "o")
		if _, err := c.Get(ctx, path, out); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if b, _ := os.ReadFile(out); string(b) != w {
			t.Fatalf("%s = %q, want %q", path, b, w)
		}
	}
}

// asOlderVeil runs fn as a veil older than names in move marks would: one that does not
// see them (they are set aside while fn runs, and put back).
func asOlderVeil(t *testing.T, be storage.Backend, fn func()) {
	t.Helper()
	marks, _ := be.List(ctx, movesDir)
	saved := map[string][]byte{}
	for _, m := range marks {
		rc, err := be.Get(ctx, movesDir, m.Name)
		if err != nil {
			t.Fatal(err)
		}
		saved[m.Name], _ = io.ReadAll(rc)
		rc.Close()
		if err := be.Delete(ctx, movesDir, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	fn()
	for name, b := range saved {
		if err := be.Put(ctx, movesDir, name, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
}
