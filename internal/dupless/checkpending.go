package dupless

import (
	"context"
	"errors"
	"sync"
)

// pendingCheck returns how Check reports an entry of the newest tree that it could not
// verify: stored otherwise than the tree root lists (ErrStale) below a name an interrupted
// mv covers, it is that mv's doing, listed in res.Pending with the words ls gives it
// (pendingNote); anything else goes to problem. The marks are read once, at the first
// such entry. Found by the session 17 review: after a mv killed mid-way (SIGKILL, on a
// directory store and on the storage service alike), check reported every entry the mv
// had written as damaged and advised 'put --force', though 'veil mv --resume' finishes it.
func (c *Client) pendingCheck(ctx context.Context, res *CheckResult, problem func(string, error)) func(plain, path string, err error) {
	var once sync.Once
	var marks []PendingMove
	return func(plain, path string, err error) {
		if errors.Is(err, ErrStale) {
			once.Do(func() { marks, _ = c.readMarks(ctx, false) })
			if note := pendingNoteOf(marks, plain); note != "" {
				res.Pending = append(res.Pending, FileError{Path: path, Err: note})
				return
			}
		}
		problem(path, err)
	}
}
