package vserver

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// recorder is a sender that records the batches it is given and answers each item with
// its own payload, so callers can check they got their own answer back.
type recorder struct {
	mu      sync.Mutex
	batches [][]byte // first payload byte of each item, per batch
}

func (r *recorder) send(_ context.Context, items []wire.RelayItem) ([]wire.RelayResult, error) {
	r.mu.Lock()
	var b []byte
	for _, it := range items {
		b = append(b, it.Payload[0])
	}
	r.batches = append(r.batches, b)
	r.mu.Unlock()
	out := make([]wire.RelayResult, len(items))
	for i, it := range items {
		out[i] = wire.RelayResult{Payload: it.Payload}
	}
	return out, nil
}

// TestMixerBatchesAndShuffles: items submitted together leave in one batch of BatchSize, in
// an order that is not always the arrival order, and every caller gets its own answer; a
// lone item leaves after MaxDelay.
func TestMixerBatchesAndShuffles(t *testing.T) {
	rec := &recorder{}
	const size = 16
	m := newMixer(size, time.Hour, rec.send, nil) // only a full batch leaves
	defer m.close()
	shuffled := false
	for round := 0; round < 8; round++ {
		var wg sync.WaitGroup
		for i := 0; i < size; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := m.submit(context.Background(), wire.RelayItem{Kind: wire.KindQuery, Payload: []byte{byte(i)}})
				if err != nil || res.Payload[0] != byte(i) {
					t.Errorf("item %d: got %v %v", i, res.Payload, err)
				}
			}()
			time.Sleep(time.Millisecond) // arrival order 0, 1, 2, ...
		}
		wg.Wait()
		rec.mu.Lock()
		last := rec.batches[len(rec.batches)-1]
		rec.mu.Unlock()
		sorted := slices.Clone(last)
		slices.Sort(sorted)
		if len(last) != size || !slices.Equal(sorted, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
			t.Fatalf("round %d: batch %v", round, last)
		}
		if !slices.Equal(last, sorted) {
			shuffled = true
		}
	}
	if len(rec.batches) != 8 {
		t.Fatalf("%d batches for 8 full rounds", len(rec.batches))
	}
	if !shuffled {
		t.Fatal("8 batches of 16 all left in arrival order")
	}

	lone := newMixer(size, 20*time.Millisecond, rec.send, nil)
	defer lone.close()
	if res, err := lone.submit(context.Background(), wire.RelayItem{Kind: wire.KindQuery, Payload: []byte{42}}); err != nil || res.Payload[0] != 42 {
		t.Fatalf("lone item: %v %v", res.Payload, err)
	}
}
