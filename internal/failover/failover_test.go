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
