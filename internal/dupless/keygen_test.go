package dupless

import (
	"context"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

type slowKD struct{}

func (slowKD) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return make([]mle.Key, len(ds)), nil
}

// close returns only after every batch has finished, even when it races the loop
// starting one (run with -race: a WaitGroup Add racing its Wait is reported).
func TestKeySourceCloseWaitsForBatches(t *testing.T) {
	for i := range 100 {
		s := newKeySource(slowKD{}, 8)
		for j := range 4 {
			go s.derive(context.Background(), []mle.Digest{{byte(j)}})
		}
		time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
		s.close()
	}
}
