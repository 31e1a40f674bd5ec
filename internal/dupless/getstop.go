package dupless

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/words"
)

// A get stops at the first file this machine's disk has no room for, and once the storage
// service has refused every connection for outageGrace, instead of failing every other
// file in turn (found by a user walkthrough: a get onto a 2 MiB disk printed 419 lines of
// "no space left on device", one per file, each fetched first; a get whose service went
// down printed a line per file in flight, then went on failing for 94 s). The run's error
// says it once: what, how much arrived, and what to do.

// fileError is a file's failure that stopped the run: the file's stored path beside it.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// getStopped is the error of a get whose run a full disk or an outage stopped (cause:
// context.Cause of its run), or nil if it ran to its end or something else stopped it
// (Ctrl-C). local is where the get writes; sum what it retrieved.
func getStopped(ctx context.Context, local string, sum *Summary) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, context.Canceled) {
		return nil
	}
	again := words.Count(sum.Files, "file", "files") + " retrieved: %s, then run the same get again " +
		"(with --overwrite if-changed it skips what arrived)"
	var fe *fileError
	var errno syscall.Errno
	switch op := storage.DialFailed(cause); {
	case diskFull(cause) && errors.As(cause, &fe) && errors.As(cause, &errno):
		return fmt.Errorf("get stopped: %s writing %s below %s; "+again, errno, fe.path, local, "make room")
	case op != nil:
		return fmt.Errorf("get stopped: the storage service does not answer (%w); "+again, op, "start it")
	}
	return nil
}

// lone is the error of a get of one file that failed: nothing arrived, so the run failed as
// a whole, in one line and exit 1 (found by a user walkthrough: 'veil get f /etc/passwd/x'
// printed an empty summary, the file's line and "1 file failed (named above)", exit 3).
// nil when the file (or link) arrived; its held outcome is then reported as usual.
func (s *Summary) lone() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var failed []fileEvent // a link's: its entry's outcome (nil), then its restore's
	for _, f := range s.held {
		if f.err != nil {
			failed = append(failed, f)
		}
	}
	if len(failed) != 1 || s.Files+s.Symlinks+s.Special > 0 {
		return nil
	}
	s.held, s.Errors = nil, nil
	return &fileError{failed[0].path, failed[0].err}
}
