package dupless

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/backoff"
	"github.com/veil-project/veil/internal/storage"
)

// uploadBackoff is the wait before each retry of a failed chunk upload, as restic and
// rclone retry their backends: a dropped connection or a restarting server costs a pause,
// not the files of the run.
var uploadBackoff = []time.Duration{250 * time.Millisecond, time.Second}

// permanent are the storage errors that no retry can fix.
var permanent = []error{
	storage.ErrExists, storage.ErrNotEmpty, storage.ErrIsDir, storage.ErrNotDir,
	storage.ErrInvalidName, storage.ErrIntegrity, storage.ErrPermission,
	storage.ErrTooLarge, storage.ErrQuota, storage.ErrSizeMismatch, storage.ErrChanged,
	storage.ErrNoConditions,
}

// transient reports whether err may go away if the operation is tried again.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	for _, p := range permanent {
		if errors.Is(err, p) {
			return false
		}
	}
	return true
}

// retry runs op, and again after each uploadBackoff pause while it fails transiently.
func retry(ctx context.Context, op func() error) error {
	return backoff.Retry(ctx, uploadBackoff, func(err error) bool { return transient(ctx, err) }, op)
}

// stopsRun reports whether err, after its retries, means no later upload of the run can
// succeed either, so the run stops instead of failing every file in turn: the service
// cannot store anything (full), or nothing accepted a connection to it (down; found by a
// user walkthrough: a put went on for 23 s and a line per remaining file).
func stopsRun(err error) bool {
	return errors.Is(err, storage.ErrCannotStore) || storage.DialFailed(err) != nil
}

// diskFull reports whether err is this machine's file system out of room (ENOSPC, EDQUOT):
// a get's every later file would fail the same way, so the run stops (getStopped).
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
