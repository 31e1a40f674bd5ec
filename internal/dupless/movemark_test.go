package dupless

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// wantPending checks that err refuses a name a pending 'veil mv tree moved' covers, in one
// line naming that mv and --resume.
func wantPending(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrMovePending) || !strings.Contains(err.Error(), "'veil mv tree moved' is pending") ||
		!strings.Contains(err.Error(), "'veil mv --resume'") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%s with 'mv tree moved' pending: %v", what, err)
	}
}

// A folder mv killed after each of its changes in turn leaves its mark, naming tree and
// moved, as soon as it has changed anything of either: then every command that would
// change a name it covers refuses, naming it (found by review: a second 'mv tree other'
// went through and left moved/ with files no root listed, 'ls tree' said "not found", and
// nothing said why; and a --resume onto another folder merged the rest there), commands
// elsewhere go on, and 'mv --resume' without names finishes it.
func TestPendingMoveRefusesWhatItCovers(t *testing.T) {
	fastRetries(t)
	marked, noted, checked := 0, 0, 0
	for left := int64(0); ; left++ {
		be := &killBE{Backend: newBackend(t)}
		c, master, want := moveTreeFixture(t, be, Options{Jobs: 2})
		err := be.moveKilled(c, left, "tree", "moved")
		if err == nil {
			if marked < 10 || noted == 0 || checked == 0 {
				t.Fatalf("%d kill points left a mark, ls named it %d times, check %d", marked, noted, checked)
			}
			return
		}
		next, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		next.BreakLocks(ctx)
		if _, err := next.List(ctx, "moved", false); err == nil {
			if marks, _ := be.List(ctx, movesDir); len(marks) != 1 { // moved exists: the mv had begun
				t.Fatalf("killed after %d changes: moved exists, marks %v", left, marks)
			}
		}
		if marks, _ := be.List(ctx, movesDir); len(marks) == 0 {
			next.Close()
			continue // killed before it wrote its mark: nothing done
		}
		marked++
		// ls says which mv left what the root lists otherwise.
		for _, d := range []string{"tree", "tree/d", "tree/d/f", "moved", "moved/d", "moved/d/f"} {
			es, _ := next.List(ctx, d, false)
			for _, e := range es {
				if e.Err == "" {
					continue
				}
				if !strings.HasPrefix(e.Err, "left by an interrupted 'veil mv tree moved', which is pending") {
					t.Fatalf("killed after %d changes: ls %s: %s: %s", left, d, e.Path, e.Err)
				}
				noted++
			}
		}
		// check names them as ls does, and finds no damage (found by the session 17 review:
		// it reported them as damaged, with 'put --force' as the repair).
		res, err := next.Check(ctx, CheckOptions{})
		if err != nil || len(res.Problems) != 0 || len(res.Unrecorded) != 0 {
			t.Fatalf("killed after %d changes: check: %v, problems %+v, folders without a record %v", left, err, res.Problems, res.Unrecorded)
		}
		for _, p := range res.Pending {
			if !strings.HasPrefix(p.Err, "left by an interrupted 'veil mv tree moved', which is pending") {
				t.Fatalf("killed after %d changes: check: pending %s: %s", left, p.Path, p.Err)
			}
		}
		checked += len(res.Pending)
		local := filepath.Join(t.TempDir(), "new")
		write(t, local, []byte("new"))
		wantPending(t, "mv tree other", next.Move(ctx, "tree", "other"))
		wantPending(t, "mv --resume tree other", next.ResumeMove(ctx, "tree", "other"))
		wantPending(t, "mv moved/a x", next.Move(ctx, "moved/a", "x"))
		wantPending(t, "mv tree/a elsewhere", next.Move(ctx, "tree/a", "elsewhere"))
		_, err = next.Remove(ctx, "tree", true)
		wantPending(t, "rm -r tree", err)
		wantPending(t, "mkdir moved/new", next.Mkdir(ctx, "moved/new"))
		_, err = next.Put(ctx, []string{local}, "tree/d")
		wantPending(t, "put --to tree/d", err)
		if _, err := next.Put(ctx, []string{filepath.Dir(local)}, ""); err != nil { // a folder of another name
			t.Fatalf("put of another folder: %v", err)
		}
		if err := next.Mkdir(ctx, "elsewhere/x"); err != nil {
			t.Fatalf("mkdir elsewhere with a mv pending: %v", err)
		}
		r, err := next.ResumePending(ctx)
		done, older := r.Done, r.Older
		if err != nil || older != 0 || len(done) != 1 || done[0].Src != "tree" || done[0].Dst != "moved" {
			t.Fatalf("killed after %d changes: mv --resume: %v %d %v", left, done, older, err)
		}
		if _, err := next.Remove(ctx, filepath.Base(filepath.Dir(local)), true); err != nil {
			t.Fatal(err)
		}
		if _, err := next.Remove(ctx, "elsewhere", true); err != nil {
			t.Fatal(err)
		}
		next.Close()
		checkMovedOnce(t, be, master, want)
		if _, err := be.Stat(ctx, veilDir, "moves"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("killed after %d changes: .veil/moves after the mv: %v", left, err)
		}
	}
}

// A mark of an older veil (session 13: it names no folders) is still read: the same mv
// run again finishes it, and 'mv --resume' alone counts it and leaves it.
func TestOlderMoveMarkStillFinishes(t *testing.T) {
	fastRetries(t)
	for left := int64(8); left < 40; left++ {
		be := &killBE{Backend: newBackend(t)}
		c, master, want := moveTreeFixture(t, be, Options{Jobs: 1})
		err := be.moveKilled(c, left, "tree", "moved")
		if err == nil {
			t.Fatal("no kill point left a mark and moved/")
		}
		next, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
		defer next.Close()
		next.BreakLocks(ctx)
		marks, _ := be.List(ctx, movesDir)
		if _, err := next.List(ctx, "moved", false); err != nil || len(marks) != 1 {
			continue
		}
		// The mark as session 13 wrote it.
		if _, err := next.writeRecord(ctx, movesDir, marks[0].Name, &record{Type: typeDir}); err != nil {
			t.Fatal(err)
		}
		if r, err := next.ResumePending(ctx); err != nil || len(r.Done)+len(r.Dropped) != 0 || r.Older != 1 {
			t.Fatalf("mv --resume with an older mark: %+v %v", r, err)
		}
		if err := next.Move(ctx, "tree", "moved"); err != nil {
			t.Fatalf("mv again with an older mark: %v", err)
		}
		checkMovedOnce(t, be, master, want)
		return
	}
}

// A lone small put, which takes no lock, requires .veil/moves absent in its batch: with a
// mv pending it goes under the lock, which refuses a name the mv covers and stores any
// other; once the mv is done, .veil/moves is gone and lone puts go without the lock again.
func TestLonePutWithPendingMove(t *testing.T) {
	be, dev := newGateBE(t)
	c := dev()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "tree", "a"), []byte("a"))
	mustPut(t, c, filepath.Join(dir, "tree"), "")
	encSrc, _ := c.keys.encPath("tree")
	encDst, _ := c.keys.encPath("moved")
	if err := c.writeMark(ctx, "tree", "moved", moveMark(encSrc, encDst), false); err != nil { // as a killed mv leaves it
		t.Fatal(err)
	}
	var batches []bool // whether each batch went without the lock
	be.onBatch = func(objs []storage.Object) {
		lockless := isLockless(objs)
		batches = append(batches, lockless)
		for _, o := range objs {
			if o.Absent && o.Dir == veilDir && o.Name == "moves" {
				return
			}
		}
		if lockless {
			t.Errorf("a lock-free batch without .veil/moves absent")
		}
	}
	one := filepath.Join(dir, "one")
	write(t, one, []byte("one"))
	_, err := dev().Put(ctx, []string{one}, "tree")
	wantPending(t, "lone put into tree", err)
	if _, err := dev().Put(ctx, []string{one}, "other"); err != nil {
		t.Fatalf("lone put elsewhere: %v", err)
	}
	if err := dev().Move(ctx, "tree", "moved"); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Stat(ctx, veilDir, "moves"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf(".veil/moves after the mv: %v", err)
	}
	write(t, one, []byte("two"))
	batches = nil
	if _, err := dev().Put(ctx, []string{one}, "moved"); err != nil {
		t.Fatal(err)
	}
	if len(batches) != 1 || !batches[0] {
		t.Fatalf("a lone put once the mv is done: batches %v, want one without the lock", batches)
	}
	storedAre(t, dev(), map[string]string{"moved/a": "a", "moved/one": "two", "other/one": "one"})
}

// cancelledMove runs 'mv tree moved' on moveTreeFixture's tree and cancels it (Ctrl-C)
// after its first file: it reports the interruption, publishes its root and settles its
// mark.
func cancelledMove(t *testing.T) (*Client, storage.Backend, []byte, map[string]string) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	var armed atomic.Bool
	be := newBackend(t)
	c, master, want := moveTreeFixture(t, be, Options{Jobs: 1, Events: Events{File: func(string, error) {
		if armed.Load() {
			cancel()
		}
	}}})
	armed.Store(true)
	err := c.Move(cctx, "tree", "moved")
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("mv cancelled: %v", err)
	}
	armed.Store(false)
	marks, err := c.readMarks(ctx, false)
	if err != nil || len(marks) != 1 || !marks[0].Settled {
		t.Fatalf("the cancelled mv's mark: %+v %v", marks, err)
	}
	return c, be, master, want
}

// A mv that reports its interruption (Ctrl-C) publishes its root and settles its mark:
// nothing it moved is unlisted, so other commands go on; one inside its folders keeps the
// mark (running the mv again still finishes it), and one that changes a folder itself
// (rm -r moved) drops it, so that a later mv onto a new folder of that name refuses it as
// existing instead of merging into it (found by review).
func TestSettledMoveMark(t *testing.T) {
	c, be, master, want := cancelledMove(t)
	if err := c.Mkdir(ctx, "moved/new"); err != nil {
		t.Fatalf("mkdir inside a settled mv's destination: %v", err)
	}
	if _, err := c.Remove(ctx, "moved/new", true); err != nil {
		t.Fatal(err)
	}
	if err := c.Move(ctx, "tree", "moved"); err != nil { // the mark kept: finishes it
		t.Fatalf("mv again: %v", err)
	}
	checkMovedOnce(t, be, master, want)

	c, _, _, _ = cancelledMove(t)
	if _, err := c.Remove(ctx, "moved", true); err != nil {
		t.Fatalf("rm -r of a settled mv's destination: %v", err)
	}
	if marks, _ := c.readMarks(ctx, false); len(marks) != 0 {
		t.Fatalf("marks after rm -r moved: %+v", marks)
	}
	if err := c.Mkdir(ctx, "moved"); err != nil {
		t.Fatal(err)
	}
	if err := c.Move(ctx, "tree", "moved"); !errors.Is(err, storage.ErrExists) || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("mv onto a new folder of a dropped mv's name: %v", err)
	}
	if es, err := c.List(ctx, "moved", false); err != nil || len(es) != 0 {
		t.Fatalf("the new moved: %v %v", es, err)
	}
}

// A rerun that keeps files (the destination holds another version) settles its mark: the
// user removes one of the pair, which the mark does not refuse, and the mv run again
// finishes (a running mark would have refused the rm, and nothing could finish the mv).
func TestKeptFilesThenRerun(t *testing.T) {
	be := newBackend(t)
	c, _, _ := moveTreeFixture(t, be, Options{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "a"), []byte("mine"))
	write(t, filepath.Join(dir, "x", "b"), []byte("b"))
	write(t, filepath.Join(dir, "y", "a"), []byte("theirs"))
	mustPut(t, c, filepath.Join(dir, "x"), "")
	mustPut(t, c, filepath.Join(dir, "y"), "")
	if err := c.ResumeMove(ctx, "x", "y"); err == nil || !strings.Contains(err.Error(), "x/a") {
		t.Fatalf("resume onto a different file: %v", err)
	}
	if _, err := c.Remove(ctx, "y/a", false); err != nil {
		t.Fatalf("rm of one of the pair: %v", err)
	}
	if err := c.Move(ctx, "x", "y"); err != nil {
		t.Fatalf("mv again: %v", err)
	}
	storedAre(t, c, map[string]string{"y/a": "mine", "y/b": "b"})
	if marks, _ := be.List(ctx, movesDir); len(marks) != 0 {
		t.Fatalf("marks left: %v", marks)
	}
}

// A folder's mv that fails before it writes its mark (a file on its destination's path)
// leaves none, settled or not: .veil/moves stays absent, and lone puts lock-free.
func TestFailedMoveLeavesNoMark(t *testing.T) {
	be := newBackend(t)
	c, _, _ := moveTreeFixture(t, be, Options{})
	if err := c.Move(ctx, "tree/d", "tree/a/x"); err == nil || !strings.Contains(err.Error(), "tree/a is a stored file") {
		t.Fatalf("mv below a file: %v", err)
	}
	if _, err := be.Stat(ctx, veilDir, "moves"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf(".veil/moves after a failed mv: %v", err)
	}
}

// 'veil mv --resume' without names tries every pending mv, not only those before the
// first that fails: a settled mv that keeps files (the destination holds another version)
// fails each time it runs until the user removes one of the pair, and a running mark
// listed after it was never finished, though it refuses every name it covers (found by
// review). Each failure is reported, and the others are done.
func TestResumePendingGoesOnPastAFailure(t *testing.T) {
	be := newBackend(t)
	c, master, want := moveTreeFixture(t, be, Options{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "a"), []byte("mine"))
	write(t, filepath.Join(dir, "y", "a"), []byte("theirs"))
	mustPut(t, c, filepath.Join(dir, "x"), "")
	mustPut(t, c, filepath.Join(dir, "y"), "")
	if err := c.ResumeMove(ctx, "x", "y"); err == nil {
		t.Fatal("resume onto a different file went through")
	}
	failing, err := c.readMarks(ctx, false)
	if err != nil || len(failing) != 1 || !failing[0].Settled {
		t.Fatalf("the kept mv's mark: %+v %v", failing, err)
	}
	// A killed 'mv tree DST' that wrote its mark only, listed after the failing one (the
	// service lists names in order): DST is the first of moved, moved1, ... whose mark
	// sorts after it.
	encSrc, _ := c.keys.encPath("tree")
	dst := "moved"
	for i := 1; ; i++ {
		encDst, _ := c.keys.encPath(dst)
		if m := moveMark(encSrc, encDst); m > failing[0].name {
			if err := c.writeMark(ctx, "tree", dst, m, false); err != nil {
				t.Fatal(err)
			}
			break
		}
		dst = fmt.Sprintf("moved%d", i)
	}
	next, err := New(be, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if r, err := next.ResumePending(cctx); !errors.Is(err, context.Canceled) || len(r.Done) != 0 ||
		strings.Count(err.Error(), "finishing") != 1 { // interrupted: stops at once
		t.Fatalf("mv --resume interrupted: %v %+v", err, r)
	}
	r, err := next.ResumePending(ctx)
	done, older := r.Done, r.Older
	if err == nil || !strings.Contains(err.Error(), "'veil mv x y'") || older != 0 {
		t.Fatalf("mv --resume: err %v, older %d", err, older)
	}
	if len(done) != 1 || done[0].Src != "tree" || done[0].Dst != dst {
		t.Fatalf("mv --resume finished %+v, want tree -> %s", done, dst)
	}
	all := map[string]string{"x/a": "mine", "y/a": "theirs"}
	for rel, data := range want {
		all[dst+"/"+rel] = data
	}
	storedAre(t, next, all)
}

// A name in a command line veil suggests ('veil mv S D' is pending: run it again) pastes
// back as the name: one holding a control character is quoted $'...', as text output
// quotes names; '...' carried it raw, and the CLI's error line, escaping it in place,
// showed a word that pasted as another name (found by review).
func TestShellWordPastesBack(t *testing.T) {
	for in, want := range map[string]string{
		"tree":         "tree",
		"my docs":      "'my docs'",
		"it's":         `'it'\''s'`,
		"e\x1b[31m\nx": `$'e\033[31m\nx'`,
		"caf\xe9 it's": `$'caf\351 it\'s'`,
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// A settled mark (a mv that reported its interruption) refuses nothing, so it holds no
// lone put under the lock: it lives in .veil/moves-settled, and a lock-free put requires
// only .veil/moves absent. Found by review: kept in .veil/moves, it sent every lone small
// put down the locked path (23 requests instead of 11-12) until a command dropped it.
func TestLonePutWithSettledMark(t *testing.T) {
	be, dev := newGateBE(t)
	c := dev()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "tree", "a"), []byte("a"))
	mustPut(t, c, filepath.Join(dir, "tree"), "")
	encSrc, _ := c.keys.encPath("tree")
	encDst, _ := c.keys.encPath("moved")
	if err := c.writeMark(ctx, "tree", "moved", moveMark(encSrc, encDst), true); err != nil { // as a Ctrl-C'd mv leaves it
		t.Fatal(err)
	}
	var batches []bool // whether each batch went without the lock
	be.onBatch = func(objs []storage.Object) { batches = append(batches, isLockless(objs)) }
	one := filepath.Join(dir, "one")
	write(t, one, []byte("one"))
	if _, err := dev().Put(ctx, []string{one}, "tree"); err != nil { // inside the settled mv's source
		t.Fatal(err)
	}
	if len(batches) != 1 || !batches[0] {
		t.Fatalf("a lone put beside a settled mark: batches %v, want one without the lock", batches)
	}
	marks, err := dev().readMarks(ctx, false)
	if err != nil || len(marks) != 1 || !marks[0].Settled || marks[0].Src != "tree" {
		t.Fatalf("the settled mark after the put: %+v %v", marks, err)
	}
	if _, err := be.Stat(ctx, veilDir, "moves"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf(".veil/moves with only a settled mark: %v", err)
	}
	if err := dev().Move(ctx, "tree", "moved"); err != nil { // the settled mv run again finishes it
		t.Fatal(err)
	}
	if marks, _ := dev().readMarks(ctx, false); len(marks) != 0 {
		t.Fatalf("marks after the mv finished: %+v", marks)
	}
	if _, err := be.Stat(ctx, veilDir, "moves-settled"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf(".veil/moves-settled after the mv finished: %v", err)
	}
}

// A pending mv whose source and destination are both gone (an older veil, which does not
// see marks, removed its source before it made its destination) has nothing left to move:
// run again it drops its mark and says so (the source's not-found error), and 'mv
// --resume' alone counts it dropped, no failure. Found by review: --resume reported it as
// a failure although its mark was gone.
func TestResumePendingDropsMoveWithNothingLeft(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	f := filepath.Join(t.TempDir(), "f")
	write(t, f, []byte("f"))
	encSrc, _ := c.keys.encPath("gone")
	encDst, _ := c.keys.encPath("nowhere")
	mark := moveMark(encSrc, encDst)
	for _, resumeAll := range []bool{false, true} {
		mustPut(t, c, f, "gone")
		if err := c.writeMark(ctx, "gone", "nowhere", mark, false); err != nil { // a mv killed once it wrote it
			t.Fatal(err)
		}
		asOlderVeil(t, be, func() {
			if _, err := c.Remove(ctx, "gone", true); err != nil {
				t.Fatal(err)
			}
		})
		if !resumeAll {
			err := c.Move(ctx, "gone", "nowhere")
			if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "mark is dropped") {
				t.Fatalf("mv again with nothing left: %v", err)
			}
		} else if r, err := c.ResumePending(ctx); err != nil || len(r.Done) != 0 || len(r.Dropped) != 1 || r.Dropped[0].Src != "gone" || r.Dropped[0].Dst != "nowhere" {
			t.Fatalf("mv --resume with nothing left: %+v %v", r, err)
		}
		if marks, err := c.readMarks(ctx, false); err != nil || len(marks) != 0 {
			t.Fatalf("marks left: %+v %v", marks, err)
		}
	}
}
