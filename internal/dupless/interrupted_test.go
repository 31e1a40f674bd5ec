package dupless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// A put's file that fails because its caller stopped the run (the cancellation, or its
// cause wrapped by a transport error) is listed apart as interrupted, not failed; a file
// that fails for a reason of its own stays a failure, before and after the stop.
func TestSummaryKeepsInterruptedFilesApart(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Summary{caller: ctx}
	s.addErr("early", context.Canceled) // before the stop: not the caller's doing
	cancel(stopErr("interrupted by SIGINT"))
	s.addErr("a", context.Canceled)
	s.addErr("b", fmt.Errorf("upload chunk: put KEY: %w", stopErr("interrupted by SIGINT")))
	s.addErr("c", fmt.Errorf("read c: %w", fs.ErrPermission))
	var got []string
	for _, f := range s.Interrupted {
		got = append(got, f.Path)
	}
	if fmt.Sprint(got) != "[a b]" || len(s.Errors) != 2 || s.Errors[0].Path != "early" || s.Errors[1].Path != "c" {
		t.Fatalf("interrupted %v, errors %v; want [a b] apart, early and c failed", got, s.Errors)
	}
	var pe *PartialError
	if !errors.As(s.Err(), &pe) || len(pe.Files) != 2 {
		t.Fatalf("Err() = %v, want the two failures", s.Err())
	}
}

// stopErr is a cause of the caller's cancellation, as cmd/veil's "interrupted by SIGINT".
type stopErr string

func (e stopErr) Error() string { return string(e) }
