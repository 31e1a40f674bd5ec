package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

var (
	errPass = errors.New("may pass")
	errHard = errors.New("will not pass")
)

func TestRetry(t *testing.T) {
	pauses := []time.Duration{time.Microsecond, time.Microsecond, time.Microsecond}
	again := func(err error) bool { return errors.Is(err, errPass) }
	for _, c := range []struct {
		name  string
		errs  []error // op's answers, in order; nil once exhausted
		calls int
		want  error
	}{
		{"success at once", nil, 1, nil},
		{"success after two passing failures", []error{errPass, errPass}, 3, nil},
		{"a failure that will not pass ends it", []error{errPass, errHard, errPass}, 2, errHard},
		{"pauses exhausted: the last error", []error{errPass, errPass, errPass, errPass, errPass}, 4, errPass},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), pauses, again, func() error {
				calls++
				if calls <= len(c.errs) {
					return c.errs[calls-1]
				}
				return nil
			})
			if err != c.want || calls != c.calls {
				t.Fatalf("err %v after %d calls, want %v after %d", err, calls, c.want, c.calls)
			}
		})
	}
}

// A cancelled context ends the pauses: op is not run again, its last error is returned.
func TestRetryCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := Retry(ctx, []time.Duration{time.Hour}, func(error) bool { return true }, func() error {
		calls++
		return errPass
	})
	if err != errPass || calls != 1 {
		t.Fatalf("err %v after %d calls, want %v after 1", err, calls, errPass)
	}
}
