package dupless

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/veil-project/veil/internal/storage"
)

// Move marks (docs/formats/key-record.md, "Move marks") say which folder mv is pending: a
// mark names its source and destination, and every command that changes the tree lists the
// marks under its lock and refuses a name a pending mv covers, naming the mv to finish
// first. Found by review: a killed 'veil mv tree moved' then 'veil mv tree other' left
// moved/ half filled with files no root listed, and nothing said why.
//
// A mv that ends with an error (one it reports: Ctrl-C, a file kept in its source) first
// publishes its root, then marks its mark settled (moving it to .veil/moves-settled, where
// it does not hold lock-free puts under the lock): nothing it moved is unlisted, so other
// commands go on, and one that changes its source or destination themselves (rm -r, mv
// of either, or of a folder holding one) drops the mark, so that no later mv onto a new
// folder of that name merges into it (found by review). A rerun makes the mark running
// again before it moves anything. Only a mv that ended without a word (killed, or its root
// not published) leaves a running mark, which refuses.

// ErrMovePending reports a name that an interrupted folder mv still covers.
var ErrMovePending = errors.New("an interrupted 'veil mv' is pending")

// PendingMove is an interrupted folder mv, read back from its mark.
type PendingMove struct {
	Src, Dst string // plain paths; both "" in a mark of an older veil, which names neither
	Settled  bool   // its last run ended with an error, after publishing its root
	name     string // the mark's object name below dir
	dir      string // .veil/moves, or .veil/moves-settled
}

// Mark states, in the mark's mode field.
const (
	markRunning = 0
	markSettled = 1
)

// marked reports whether m is the mark of the mv from src to dst (plain paths).
func (m PendingMove) marked(src, dst string) bool { return m.Src == src && m.Dst == dst && src != "" }

// covers reports whether the name path is, holds, or lies inside m's source or destination.
func (m PendingMove) covers(path string) bool {
	return m.Src != "" && (related(path, m.Src) || related(path, m.Dst))
}

// replaces reports whether the name path is m's source or destination or holds one.
func (m PendingMove) replaces(path string) bool {
	holds := func(p string) bool { return path == "" || path == p || strings.HasPrefix(p, path+"/") }
	return m.Src != "" && (holds(m.Src) || holds(m.Dst))
}

func related(a, b string) bool {
	return a == b || a == "" || b == "" || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// pendingError is ErrMovePending for one name, in one line that says what to run.
type pendingError struct {
	path string
	m    PendingMove
}

func (e *pendingError) Error() string {
	return fmt.Sprintf("%s: an interrupted 'veil mv %s %s' is pending; run it again, or run 'veil mv --resume', to finish it first",
		e.path, shellWord(e.m.Src), shellWord(e.m.Dst))
}

func (e *pendingError) Unwrap() error { return ErrMovePending }

// markRecord is the move mark of the folder mv from src to dst: a folder record whose
// target is src 0x00 dst, its mode markRunning or markSettled.
func markRecord(src, dst string, settled bool) *record {
	r := &record{Type: typeDir, Target: src + "\x00" + dst}
	if settled {
		r.Mode = markSettled
	}
	return r
}

// maxMarkNames is what a record's target holds (u16 length).
const maxMarkNames = 1<<16 - 1

// writeMark writes the mark of the mv from src to dst, under the name mark: running in
// .veil/moves; settled in .veil/moves-settled, then deleting the running copy (settle's
// case). A crash in between leaves both copies, which readMarks takes for running (it
// refuses what it covers until the mv runs again: never less than the mark said). A rerun
// of a settled mv writes it running, then drops the settled copy (move).
func (c *Client) writeMark(ctx context.Context, src, dst, mark string, settled bool) error {
	r := markRecord(src, dst, settled)
	if len(r.Target) > maxMarkNames {
		return fmt.Errorf("cannot move %s to %s: the two paths are longer than %d bytes together", src, dst, maxMarkNames-1)
	}
	dir := movesDir
	if settled {
		dir = settledDir
	}
	if _, err := c.writeRecord(ctx, dir, mark, r); err != nil {
		return fmt.Errorf("write the move mark: %w", err)
	}
	if settled {
		return c.dropMarkIn(ctx, movesDir, mark)
	}
	return nil
}

// settle ends a run of the mv from src to dst that failed: it publishes the command's root
// (what the run moved is then listed), then marks the mark settled, if the run got as far
// as writing it. Either failing, the mark stays running: other commands keep refusing what
// it covers.
func (c *Client) settle(ctx context.Context, src, dst, mark string) {
	ctx = context.WithoutCancel(ctx)
	if err := c.publishChanges(ctx); err != nil {
		return // reported by the command's unlock, which tries again
	}
	if _, err := c.be.Stat(ctx, movesDir, mark); err != nil {
		return // none (the run failed before it wrote it), or the mark stays as it is
	}
	if err := c.writeMark(ctx, src, dst, mark, true); err != nil {
		c.log.Warn("the move mark stays running", "err", err)
	}
}

// dropMarkIn deletes the mark name from dir (.veil/moves or .veil/moves-settled), and dir
// with it once it is empty: a lock-free put requires .veil/moves absent (commitLockless),
// and goes under the lock while it exists.
func (c *Client) dropMarkIn(ctx context.Context, dir, name string) error {
	if err := c.be.Delete(ctx, dir, name); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	c.dropDir(ctx, dir)
	return nil
}

// dropDir deletes the folder dir of .veil/ if it is empty (the storage service refuses
// otherwise).
func (c *Client) dropDir(ctx context.Context, dir string) {
	d, n := storage.Split(dir)
	c.be.Delete(ctx, d, n) // not empty, or gone: either way nothing to do
}

// readMarks reads every move mark this key wrote: the running ones (.veil/moves) and the
// settled ones (.veil/moves-settled); a name in both is running. A mark
// that does not open under this key is not this key's and is skipped; one whose names do
// not make its object name is taken for damaged, and skipped too (the mv it stood for
// refuses its destination as existing and names --resume, as without a mark). With drop
// (under the lock, where no mv is writing one), an empty folder of marks goes.
func (c *Client) readMarks(ctx context.Context, drop bool) ([]PendingMove, error) {
	// One listing of .veil says which folders of marks exist: usually neither, and a
	// command pays one request for both (it runs beside the tree root's fetch).
	infos, err := c.be.List(ctx, veilDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the move marks: %w", err)
	}
	var running, settled []PendingMove
	for _, i := range infos {
		if !i.IsDir {
			continue
		}
		switch storage.Join(veilDir, i.Name) {
		case movesDir:
			running, err = c.readMarksIn(ctx, movesDir, drop)
		case settledDir:
			settled, err = c.readMarksIn(ctx, settledDir, drop)
		}
		if err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, m := range running {
		seen[m.name] = true
	}
	for _, m := range settled {
		if !seen[m.name] {
			m.Settled = true
			running = append(running, m)
		}
	}
	return running, nil
}

// readMarksIn reads the marks in dir (readMarks).
func (c *Client) readMarksIn(ctx context.Context, dir string, drop bool) ([]PendingMove, error) {
	infos, err := c.be.List(ctx, dir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the move marks: %w", err)
	}
	var out []PendingMove
	for _, i := range infos {
		if i.IsDir {
			continue
		}
		r, err := c.readRecord(ctx, dir, i.Name)
		if errors.Is(err, ErrRecord) || errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the move mark %s: %w", i.Name, err)
		}
		m, ok := c.parseMark(i.Name, r)
		if !ok {
			c.log.Warn("a move mark whose names do not match it: ignored", "mark", i.Name)
			continue
		}
		m.dir = dir
		out = append(out, m)
	}
	if len(infos) == 0 && drop {
		c.dropDir(ctx, dir)
	}
	return out, nil
}

// parseMark reads the names of the mark name, r: none (an older veil's mark), or src and
// dst, clean, neither holding the other, whose encrypted paths make name.
func (c *Client) parseMark(name string, r *record) (PendingMove, bool) {
	m := PendingMove{name: name, Settled: r.Mode == markSettled}
	if r.Type != typeDir || len(r.Chunks) != 0 || r.Mode > markSettled {
		return m, false
	}
	if r.Target == "" {
		return PendingMove{name: name}, r.Mode == markRunning
	}
	src, dst, ok := strings.Cut(r.Target, "\x00")
	if !ok || src == "" || dst == "" || cleanPath(src) != src || cleanPath(dst) != dst || related(src, dst) {
		return m, false
	}
	es, err1 := c.keys.encPath(src)
	ed, err2 := c.keys.encPath(dst)
	if err1 != nil || err2 != nil || moveMark(es, ed) != name {
		return m, false
	}
	m.Src, m.Dst = src, dst
	return m, true
}

// startMarks starts reading the move marks for the command that is taking the lock (run
// beside its tree root's fetch); pending waits for them.
func (c *Client) startMarks(ctx context.Context) {
	var marks []PendingMove
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		marks, err = c.readMarks(ctx, true)
	}()
	c.marks = sync.OnceValues(func() ([]PendingMove, error) {
		<-done
		return marks, err
	})
}

// pending returns the move marks, as read when the command took its lock.
func (c *Client) pending(ctx context.Context) ([]PendingMove, error) {
	if c.marks == nil {
		return c.readMarks(ctx, false)
	}
	return c.marks()
}

// refusePending refuses path, a name the command is about to change, when a running mark
// of a mv other than the mv from src to dst (its own: "" for a command that is no mv)
// covers it. A settled mark whose source or destination path replaces is dropped.
func (c *Client) refusePending(ctx context.Context, src, dst string, paths ...string) error {
	marks, err := c.pending(ctx)
	if err != nil {
		return err
	}
	for _, m := range marks {
		if m.marked(src, dst) {
			continue
		}
		for _, p := range paths {
			switch {
			case !m.covers(p):
			case !m.Settled:
				return &pendingError{path: p, m: m}
			case m.replaces(p):
				if err := c.dropMarkIn(ctx, m.dir, m.name); err != nil {
					return fmt.Errorf("drop the mark of the interrupted 'veil mv %s %s': %w", shellWord(m.Src), shellWord(m.Dst), err)
				}
				c.log.Info("an interrupted mv is dropped: its source or destination changes", "src", m.Src, "dst", m.Dst)
			}
		}
	}
	return nil
}

// pendingNote is what ls says of an entry the tree root lists otherwise, below path, when a
// killed mv covers path: the mv moved it, and running it again finishes it ("" when none
// does). Found by review: ls said "rolled back ... or written by a command that did not
// finish", and nothing said which command.
func (c *Client) pendingNote(ctx context.Context, path string) string {
	marks, err := c.readMarks(ctx, false)
	if err != nil {
		return ""
	}
	return pendingNoteOf(marks, path)
}

// pendingNoteOf is pendingNote among marks.
func pendingNoteOf(marks []PendingMove, path string) string {
	for _, m := range marks {
		if !m.Settled && m.covers(path) {
			return fmt.Sprintf("left by an interrupted 'veil mv %s %s', which is pending: run it again, or run 'veil mv --resume', to finish it",
				shellWord(m.Src), shellWord(m.Dst))
		}
	}
	return ""
}

// nothingLeftError is a rerun of an interrupted folder mv that found neither its source nor
// its destination (another veil's command removed the source before the mv made its
// destination): nothing is left to move, and the mv's mark is dropped. For the mv typed
// again it is the source's not-found error, saying so; 'mv --resume' alone counts it
// done (ResumePending). Found by review: --resume reported it as a failure (exit 1 or 3)
// although its mark was gone, and the next run said there was nothing to finish.
type nothingLeftError struct {
	src, dst string
	err      error // the source's storage.ErrNotFound
}

func (e *nothingLeftError) Error() string {
	return fmt.Sprintf("%v, nor is %s: nothing was left of the interrupted mv to move, and its mark is dropped", e.err, e.dst)
}

func (e *nothingLeftError) Unwrap() error { return e.err }

// Resumed is what ResumePending did.
type Resumed struct {
	Done    []PendingMove // finished
	Dropped []PendingMove // nothing left to move (source and destination gone): their marks dropped
	Older   int           // marks of an older veil, which name no folders: left as they are
}

// ResumePending finishes every interrupted folder mv whose mark names its folders, one
// after another, as running each again would ('veil mv --resume' without SRC and DEST).
// A mv with nothing left to move (its source and destination both gone) is dropped, not
// failed. Older counts the marks of an older veil, which name no folders: the user has to
// run those mvs again as typed (or with --resume SRC DEST). A mv that fails (one that
// keeps files its destination holds in another version fails until the user removes one
// of each pair) does not stop the others: found by review, a running mark listed after
// such a one was never finished, and went on refusing what it covers. err joins the
// failures, each naming its mv.
func (c *Client) ResumePending(ctx context.Context) (res Resumed, err error) {
	if err := c.checkOwner(ctx); err != nil {
		return res, err
	}
	marks, err := c.readMarks(ctx, false)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, m := range marks {
		if m.Src == "" {
			res.Older++
			continue
		}
		err := c.move(ctx, m.Src, m.Dst, true)
		var left *nothingLeftError
		switch {
		case err == nil:
			res.Done = append(res.Done, m)
		case errors.As(err, &left):
			res.Dropped = append(res.Dropped, m)
		default:
			errs = append(errs, fmt.Errorf("finishing 'veil mv %s %s': %w", shellWord(m.Src), shellWord(m.Dst), err))
			if ctx.Err() != nil { // interrupted: the rest is left for the next run
				return res, errors.Join(errs...)
			}
		}
	}
	return res, errors.Join(errs...)
}
