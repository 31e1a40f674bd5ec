package dupless

import (
	"context"
	"sync"
)

// pendingCheck returns the words ls gives an entry below plain path when an interrupted
// mv covers it (pendingNote), "" when none does; the marks are read once, at the first
// call. Check lists such an entry in res.Pending instead of as damage (stored otherwise
// than the tree root lists, ErrStale) or as a folder an older veil left without a record:
// the mv moved it, and 'veil mv --resume' finishes it. Found by the session 17 review:
// after a mv killed mid-way (SIGKILL, on a directory store and on the storage service
// alike), check reported every entry the mv had written as damaged and advised 'put
// --force', and a folder it had made without its record yet as an older veil's.
func (c *Client) pendingCheck(ctx context.Context) func(plain string) string {
	var once sync.Once
	var marks []PendingMove
	return func(plain string) string {
		once.Do(func() { marks, _ = c.readMarks(ctx, false) })
		return pendingNoteOf(marks, plain)
	}
}
