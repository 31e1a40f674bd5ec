package index

import (
	"fmt"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// TestChurnDoesNotGrowIndex: publishing and unpublishing pairs over and over (a K-server
// running for months) must not leave the index holding every key it ever saw.
func TestChurnDoesNotGrowIndex(t *testing.T) {
	x := New()
	x.Put(&wire.KeyItem{ID: id(1 << 20), Key: "stays.txt"})
	for i := 0; i < 20000; i++ {
		x.Put(&wire.KeyItem{ID: id(i), Key: fmt.Sprintf("churn-%d.dat", i)})
		x.Delete(id(i))
	}
	x.mu.RLock()
	docs, tri := len(x.docs), 0
	for _, p := range x.tri {
		tri += len(p)
	}
	x.mu.RUnlock()
	if docs > 4096 || tri > 4096*16 {
		t.Errorf("1 live pair, index holds %d docs and %d trigram postings", docs, tri)
	}
	if h := x.Substring("ays", 10, nil); len(h) != 1 || h[0].Key != "stays.txt" {
		t.Fatalf("after churn: %+v", h)
	}
	if h := x.Substring("s", 10, nil); len(h) != 1 {
		t.Fatalf("after churn, short query: %+v", h)
	}
}
