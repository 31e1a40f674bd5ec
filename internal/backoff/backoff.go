package backoff

import (
	"context"
	"time"
)

// Retry runs op, and again after each pause of pauses while op fails and again(err) says
// the failure may pass. It returns op's last error (nil once op succeeds); a cancelled
// ctx ends the waiting, not op.
func Retry(ctx context.Context, pauses []time.Duration, again func(error) bool, op func() error) error {
	err := op()
	for _, d := range pauses {
		if err == nil || !again(err) {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = op()
	}
	return err
}
