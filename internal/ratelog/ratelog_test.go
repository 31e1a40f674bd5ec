package ratelog

import (
	"sync"
	"testing"
	"time"
)

// The first occurrence is logged, the next ones within the interval are held and counted,
// and the first one after it is logged with that count.
func TestSpacerHoldsAndCounts(t *testing.T) {
	var s Spacer
	s.SetEvery(time.Hour)
	if ok, held := s.Due(); !ok || held != 0 {
		t.Fatalf("first occurrence: due %v, held %d; want true, 0", ok, held)
	}
	for i := 0; i < 4; i++ {
		if ok, _ := s.Due(); ok {
			t.Fatalf("occurrence %d within the interval let through", i+2)
		}
	}
	s.SetEvery(time.Nanosecond) // the interval has passed
	time.Sleep(time.Millisecond)
	if ok, held := s.Due(); !ok || held != 4 {
		t.Fatalf("after the interval: due %v, held %d; want true, 4", ok, held)
	}
	time.Sleep(time.Millisecond)
	if ok, held := s.Due(); !ok || held != 0 {
		t.Fatalf("the count restarts: due %v, held %d; want true, 0", ok, held)
	}
}

// Concurrent occurrences within one interval: exactly one is logged, the others counted.
func TestSpacerConcurrent(t *testing.T) {
	var s Spacer // DefaultEvery
	var mu sync.Mutex
	logged := 0
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _ := s.Due(); ok {
				mu.Lock()
				logged++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.SetEvery(time.Nanosecond)
	time.Sleep(time.Millisecond)
	if ok, held := s.Due(); logged != 1 || !ok || held != 49 {
		t.Fatalf("50 concurrent occurrences: %d logged, then due %v with %d held; want 1, true, 49", logged, ok, held)
	}
}
