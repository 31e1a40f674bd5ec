package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// killBE is a storage service whose client dies after `left` more changes once armed:
// every change after that fails (nothing more is written, not the command's tree root nor
// its lock's release), as when the process is killed.
type killBE struct {
	storage.Backend
	armed atomic.Bool
	left  atomic.Int64
}

func (b *killBE) dead() bool { return b.armed.Load() && b.left.Add(-1) < 0 }

// moveKilled runs c's mv of src to dst with the storage killed after left changes, and
// returns the mv's error (errGone when the kill point came before its end).
func (b *killBE) moveKilled(c *Client, left int64, src, dst string) error {
	b.left.Store(left)
	b.armed.Store(true)
	defer b.armed.Store(false)
	return c.Move(ctx, src, dst)
}

func (b *killBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	if b.dead() {
		return errGone
	}
	return b.Backend.Put(ctx, d, n, r, s)
}

func (b *killBE) Delete(ctx context.Context, d, n string) error {
	if b.dead() {
		return errGone
	}
	return b.Backend.Delete(ctx, d, n)
}

func (b *killBE) Move(ctx context.Context, sd, sn, dd, dn string) error {
	if b.dead() {
		return errGone
	}
	return b.Backend.Move(ctx, sd, sn, dd, dn)
}

func (b *killBE) Create(ctx context.Context, d string) error {
	if b.dead() {
		return errGone
	}
	return b.Backend.Create(ctx, d)
}

// moveTreeFixture stores a tree of 2 folders (one nested) of files under "tree" and
// returns its client, master key and the files' contents by path below it.
func moveTreeFixture(t *testing.T, be storage.Backend, opts Options) (*Client, []byte, map[string]string) {
	t.Helper()
	master := NewMasterKey()
	opts.Keys = mle.LocalKeys{}
	c, err := New(be, master, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	local := filepath.Join(t.TempDir(), "tree")
	want := map[string]string{}
	for i, rel := range []string{"a", "b", "d/c", "d/e", "d/f/g", "d/f/h"} {
		want[rel] = fmt.Sprintf("content %d", i)
		write(t, filepath.Join(local, rel), []byte(want[rel]))
	}
	mustPut(t, c, local, "")
	return c, master, want
}

// checkMovedOnce checks, as a new client would see it, that every file is under "moved"
// exactly once with its content, that nothing is left under "tree", that check finds
// nothing wrong and that no move mark is left.
func checkMovedOnce(t *testing.T, be storage.Backend, master []byte, want map[string]string) {
	t.Helper()
	c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := filepath.Join(t.TempDir(), "out")
	if s, err := c.Get(ctx, "moved", out); err != nil || s.Err() != nil {
		t.Fatalf("get moved: %v %v", err, s.Err())
	}
	got := map[string]string{}
	filepath.Walk(out, func(p string, fi os.FileInfo, _ error) error {
		if fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(out, p)
			b, _ := os.ReadFile(p)
			got[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("moved holds %v, want %v", got, want)
	}
	if _, err := c.List(ctx, "tree", false); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("tree after the mv: %v", err)
	}
	if res, err := c.Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 0 || res.Files != len(want) {
		t.Fatalf("check after the mv: %+v %v", res, err)
	}
	if marks, _ := be.List(ctx, movesDir); len(marks) != 0 {
		t.Fatalf("move marks left: %v", marks)
	}
}

// An interrupted mv of a folder finishes when the same mv is run again (found by a user
// walkthrough: it failed with "already exists"), whatever step it was cut off at: killed
// (nothing published, its lock left behind) after each of its changes in turn, or
// interrupted (Ctrl-C: it publishes what it did) after each file. Every file ends up at
// the destination exactly once, readable, and check finds nothing wrong.
func TestMoveRerunFinishesInterruptedMove(t *testing.T) {
	fastRetries(t)
	t.Run("killed", func(t *testing.T) {
		for left := int64(0); ; left++ {
			be := &killBE{Backend: newBackend(t)}
			c, master, want := moveTreeFixture(t, be, Options{Jobs: 2})
			err := be.moveKilled(c, left, "tree", "moved")
			if err == nil { // not killed: every step of the mv was tried
				checkMovedOnce(t, be, master, want)
				if left < 20 {
					t.Fatalf("the mv took %d changes", left)
				}
				t.Logf("killed after each of %d changes", left)
				return
			}
			if !errors.Is(err, errGone) {
				t.Fatalf("killed after %d changes: %v", left, err)
			}
			next, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 2})
			if err != nil {
				t.Fatal(err)
			}
			next.BreakLocks(ctx) // the killed command's lock, as its host would take it over
			if err := next.Move(ctx, "tree", "moved"); err != nil {
				t.Fatalf("mv again after a kill after %d changes: %v", left, err)
			}
			next.Close()
			checkMovedOnce(t, be, master, want)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		for after := 0; after < 6; after++ {
			var moved atomic.Int64
			var armed atomic.Bool // the put's files do not count
			cctx, cancel := context.WithCancel(ctx)
			be := newBackend(t)
			c, master, want := moveTreeFixture(t, be, Options{Jobs: 1, Events: Events{File: func(string, error) {
				if armed.Load() && moved.Add(1) > int64(after) {
					cancel()
				}
			}}})
			armed.Store(true)
			err := c.Move(cctx, "tree", "moved")
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("mv cancelled after %d files: %v", after, err)
			}
			if err := c.Move(ctx, "tree", "moved"); err != nil {
				t.Fatalf("mv again after %d files: %v", after, err)
			}
			checkMovedOnce(t, be, master, want)
		}
	})
}

// Without a move mark (an mv of an older veil), running it again names the one command
// that finishes it; mv --resume (ResumeMove) then moves what is left, and keeps in the
// source a file the destination holds in another version, saying so.
func TestResumeMoveWithoutMark(t *testing.T) {
	be := newBackend(t)
	c, master, want := moveTreeFixture(t, be, Options{})
	if err := c.Mkdir(ctx, "moved/d"); err != nil { // what an older veil's mv left first
		t.Fatal(err)
	}
	err := c.Move(ctx, "tree", "moved")
	if !errors.Is(err, storage.ErrExists) || !strings.Contains(err.Error(), "'veil mv --resume tree moved'") {
		t.Fatalf("mv onto an existing folder: %v", err)
	}
	if err := c.ResumeMove(ctx, "tree", "moved"); err != nil {
		t.Fatal(err)
	}
	checkMovedOnce(t, be, master, want)
	if err := c.ResumeMove(ctx, "tree", "moved"); err != nil { // nothing left: done
		t.Fatalf("resume of a finished mv: %v", err)
	}

	// A conflicting file stays where it is, on both sides.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "a"), []byte("mine"))
	write(t, filepath.Join(dir, "y", "a"), []byte("theirs"))
	write(t, filepath.Join(dir, "x", "b"), []byte("b"))
	mustPut(t, c, filepath.Join(dir, "x"), "")
	mustPut(t, c, filepath.Join(dir, "y"), "")
	err = c.ResumeMove(ctx, "x", "y")
	if err == nil || !strings.Contains(err.Error(), "except 1 file y holds") || !strings.Contains(err.Error(), "x/a") {
		t.Fatalf("resume onto a different file: %v", err)
	}
	storedAre(t, c, map[string]string{"x/a": "mine", "y/a": "theirs", "y/b": "b"})
}

// A file's mv cut off between writing the new record and deleting the old one finishes
// when run again; a different file at the destination is still refused.
func TestMoveRerunFinishesFileMove(t *testing.T) {
	fastRetries(t)
	for left := int64(0); left < 12; left++ {
		be := &killBE{Backend: newBackend(t)}
		c, master, _ := moveTreeFixture(t, be, Options{})
		err := be.moveKilled(c, left, "tree/a", "tree/z")
		if err != nil && !errors.Is(err, errGone) {
			t.Fatal(err)
		}
		next, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
		next.BreakLocks(ctx)
		if err != nil {
			if err := next.Move(ctx, "tree/a", "tree/z"); err != nil {
				t.Fatalf("mv again after %d changes: %v", left, err)
			}
		}
		if res, err := next.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
			t.Fatalf("check after %d changes: %+v %v", left, res, err)
		}
		if _, err := next.List(ctx, "tree/a", false); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("tree/a after the mv: %v", err)
		}
		if err := next.Move(ctx, "tree/b", "tree/z"); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("mv onto another file: %v", err)
		}
		next.Close()
	}
}
