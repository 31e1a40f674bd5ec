package store

import (
	"errors"

	bolt "go.etcd.io/bbolt"
)

// errClosed is an operation on a closed service.
var errClosed = errors.New("store is closed")

// committer is group commit: upload transactions queue up while one database commit (and
// its fsync) runs, and the next commit takes all of them at once. It adds no delay for a
// lone writer (unlike bbolt's Batch), and shares one fsync among concurrent ones.
type committer struct {
	db      *bolt.DB
	ch      chan *commitReq
	quit    chan struct{}
	stopped chan struct{}
}

type commitReq struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// maxGroup bounds how many transactions share one commit.
const maxGroup = 256

func newCommitter(db *bolt.DB) *committer {
	c := &committer{db: db, ch: make(chan *commitReq), quit: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

// do runs fn in a write transaction shared with other concurrent callers; fn must change
// nothing outside the transaction, since it may run twice (again alone, if another member
// of its group failed).
func (c *committer) do(fn func(*bolt.Tx) error) error {
	r := &commitReq{fn: fn, done: make(chan error, 1)}
	select {
	case c.ch <- r:
		return <-r.done
	case <-c.quit:
		return errClosed
	}
}

func (c *committer) run() {
	defer close(c.stopped)
	for {
		var first *commitReq
		select {
		case first = <-c.ch:
		case <-c.quit:
			return
		}
		group := []*commitReq{first}
	drain:
		for len(group) < maxGroup {
			select {
			case r := <-c.ch:
				group = append(group, r)
			default:
				break drain
			}
		}
		err := c.db.Update(func(tx *bolt.Tx) error {
			for _, r := range group {
				if err := r.fn(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil || len(group) == 1 {
			for _, r := range group {
				r.done <- err
			}
			continue
		}
		for _, r := range group { // one failed: rerun each alone for its own answer
			r.done <- c.db.Update(r.fn)
		}
	}
}

// close stops the committer after the group in progress.
func (c *committer) close() {
	close(c.quit)
	<-c.stopped
}
