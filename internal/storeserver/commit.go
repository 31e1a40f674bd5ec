package storeserver

import (
	"errors"
	"time"
)

// errClosed is an operation on a closed service.
var errClosed = errors.New("store is closed")

// committer is group commit: upload transactions queue up while one database commit (and
// its fsync) runs, and the next commit takes all of them at once. It adds no delay for a
// lone writer (unlike bbolt's Batch), and shares one fsync among concurrent ones.
type committer struct {
	exec    func(group []*commitReq) error // runs every member's fn in one transaction
	groups  func(n int)                    // observes each group's size (metrics)
	ch      chan *commitReq
	pending []*commitReq // taken by more but not joined: first in the next group
	joined  []*commitReq // joined the group in progress through more
	alone   bool         // members are being rerun alone: more adds none
	quit    chan struct{}
	stopped chan struct{}
}

type commitReq struct {
	user  string      // whose namespace fn changes ("" for none)
	names [][2]string // names of user's fn will look up (a hint; may be nil)
	fn    func(metaTx) error
	done  chan error
}

// maxGroup bounds how many transactions share one commit.
const maxGroup = 256

func newCommitter(exec func([]*commitReq) error, groups func(int)) *committer {
	c := &committer{exec: exec, groups: groups, ch: make(chan *commitReq), quit: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

// do runs fn in a write transaction shared with other concurrent callers; fn must change
// nothing outside the transaction, since it may run twice (again alone, if another member
// of its group failed).
func (c *committer) do(user string, fn func(metaTx) error) error {
	return c.doNames(user, nil, fn)
}

// doNames is do with the names fn will look up.
func (c *committer) doNames(user string, names [][2]string, fn func(metaTx) error) error {
	r := &commitReq{user: user, names: names, fn: fn, done: make(chan error, 1)}
	select {
	case c.ch <- r:
		return <-r.done
	case <-c.quit:
		return errClosed
	}
}

func (c *committer) run() {
	defer close(c.stopped)
	last := 0
	for {
		var first *commitReq
		if len(c.pending) > 0 {
			first, c.pending = c.pending[0], c.pending[1:]
		} else {
			select {
			case first = <-c.ch:
			case <-c.quit:
				return
			}
		}
		group := c.gather(first, last)
		err := c.exec(group)
		group, c.joined = append(group, c.joined...), nil
		last = len(group)
		c.groups(len(group))
		if err == nil || len(group) == 1 {
			for _, r := range group {
				r.done <- err
			}
			continue
		}
		c.alone = true
		for _, r := range group { // one failed: rerun each alone for its own answer
			r.done <- c.exec([]*commitReq{r})
		}
		c.alone = false
	}
}

// groupWait is how long a commit waits for more members when the previous one had several:
// concurrent clients come back in waves (the ones just answered resubmit while the others
// wait), and merging the waves halves the commits. A lone writer never waits.
const groupWait = time.Millisecond

// gather collects the requests already queued behind first, and with concurrency (the
// previous group had more than one member) those arriving within groupWait.
func (c *committer) gather(first *commitReq, last int) []*commitReq {
	group := append([]*commitReq{first}, c.pending...)
	c.pending = nil
	for len(group) < maxGroup {
		select {
		case r := <-c.ch:
			group = append(group, r)
			continue
		default:
		}
		break
	}
	if last <= 1 {
		return group
	}
	t := time.NewTimer(groupWait)
	defer t.Stop()
	for len(group) < maxGroup && len(group) < last*2 {
		select {
		case r := <-c.ch:
			group = append(group, r)
		case <-t.C:
			return group
		}
	}
	return group
}

// more, called by exec while it runs a group (on the committer's goroutine), takes the
// requests queued meanwhile (without waiting, at most maxGroup in all): those join accepts
// join the group in progress (exec runs them in its transaction), the others open the
// next group. On PostgreSQL a group joins the requests that arrived while it waited for
// its users' row locks (held by another node's group): larger groups, no added wait.
func (c *committer) more(size int, join func(*commitReq) bool) []*commitReq {
	if c.alone {
		return nil
	}
	var late []*commitReq
	for size+len(late) < maxGroup {
		select {
		case r := <-c.ch:
			if join(r) {
				late = append(late, r)
			} else {
				c.pending = append(c.pending, r)
			}
			continue
		default:
		}
		break
	}
	c.joined = append(c.joined, late...)
	return late
}

// close stops the committer after the group in progress.
func (c *committer) close() {
	close(c.quit)
	<-c.stopped
}
