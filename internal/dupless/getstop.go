package dupless

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/veil-project/veil/internal/words"
)

// A get stops at the first file this machine's disk has no room for, instead of failing
// every other file in turn (found by a user walkthrough: a get onto a 2 MiB disk printed
// 419 lines of "no space left on device", one per file, each after fetching it). The run's
// error says it once: which file, where, how much arrived, and what to do.

// fileError is a file's failure that stopped the run: the file's stored path beside it.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// getStopped is the error of a get whose run a full disk stopped (cause: context.Cause of
// its run), or nil if it ran to its end or something else stopped it (Ctrl-C). local is
// where the get writes; sum what it retrieved.
func getStopped(ctx context.Context, local string, sum *Summary) error {
	cause := context.Cause(ctx)
	var fe *fileError
	var errno syscall.Errno
	if cause != nil && diskFull(cause) && errors.As(cause, &fe) && errors.As(cause, &errno) {
		return fmt.Errorf("get stopped: %s writing %s below %s; %s retrieved: make room, then run the same get again "+
			"(with --overwrite if-changed it skips what arrived)", errno, fe.path, local, words.Count(sum.Files, "file", "files"))
	}
	return nil
}
