package failover

import (
	"slices"
	"testing"
	"time"
)

func TestOrderTakesTurns(t *testing.T) {
	r := New(3, time.Hour)
	for _, want := range [][]int{{1, 2, 0}, {2, 0, 1}, {0, 1, 2}, {1, 2, 0}} {
		if got := r.Order(); !slices.Equal(got, want) {
			t.Fatalf("Order() = %v, want %v", got, want)
		}
	}
}

func TestMarkedDownGoesLast(t *testing.T) {
	r := New(3, time.Hour)
	r.MarkDown(1)
	if got, want := r.Order(), []int{2, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("Order() = %v, want %v", got, want)
	}
	r.MarkDown(0)
	if got, want := r.Order(), []int{2, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("Order() = %v, want %v (the down ones in turn, after the up one)", got, want)
	}
}

func TestDownExpires(t *testing.T) {
	r := New(2, -time.Second) // marked down until a moment already past
	r.MarkDown(1)
	if got, want := r.Order(), []int{1, 0}; !slices.Equal(got, want) {
		t.Fatalf("Order() = %v, want %v", got, want)
	}
}

// An endpoint that keeps failing is left out twice as long after each failure, up to
// MaxDownFactor times downFor; one answer resets it.
func TestDownBacksOff(t *testing.T) {
	r := New(2, time.Minute)
	for _, factor := range []int{1, 2, 4, 8, 16, 16, 16} {
		r.MarkDown(1)
		if got, want := r.DownFor(1), time.Duration(factor)*time.Minute; got > want || got < want-time.Second {
			t.Fatalf("left out for %v, want %v", got, want)
		}
	}
	r.MarkUp(1)
	r.MarkDown(1)
	if got := r.DownFor(1); got > time.Minute || got < time.Minute-time.Second {
		t.Fatalf("after an answer, left out for %v, want 1m", got)
	}
	if got := r.DownFor(0); got != 0 {
		t.Fatalf("an endpoint never marked down is left out for %v", got)
	}
}
