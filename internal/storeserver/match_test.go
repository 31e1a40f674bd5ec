package storeserver

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// matchNodes are two PostgreSQL nodes sharing one blob directory, and alice's namespace
// on each.
func matchNodes(t *testing.T) (na, nb *Namespace) {
	t.Helper()
	la, lb := sharedBlobDir(t)
	a := newPGService(t, Config{Blobs: la})
	b := secondNode(t, a, Config{Blobs: lb})
	na, _ = addUser(t, a, "alice")
	return na, mustNS(t, b, "alice")
}

// Two nodes on one PostgreSQL racing match batches on one name: exactly one of each pair
// commits, the other is ErrChanged and stores nothing of its batch (the check and the
// write are one transaction under the user's row lock, docs/design-store.md "Several
// nodes").
func TestPGTwoNodesRaceMatch(t *testing.T) {
	na, nb := matchNodes(t)
	for round := range 20 {
		base := fmt.Sprintf("base%d", round)
		putBytes(t, na, "", "head", []byte(base))
		h := sha256.Sum256([]byte(base))
		start := make(chan struct{})
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, ns := range []*Namespace{na, nb} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = ns.PutBatch(t.Context(), []storage.Object{
					{Dir: "side", Name: fmt.Sprintf("r%d-%d", round, i), Data: []byte("s")},
					{Name: "head", Data: fmt.Appendf(nil, "r%d-%d", round, i), Match: &h},
				})
			}()
		}
		close(start)
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(firstNonNilErr(errs), storage.ErrChanged) {
			t.Fatalf("round %d: %v and %v, want exactly one ErrChanged", round, errs[0], errs[1])
		}
		won := 0
		if errs[0] != nil {
			won = 1
		}
		for _, ns := range []*Namespace{na, nb} {
			if got, err := getBytes(t, ns, "", "head"); err != nil || string(got) != fmt.Sprintf("r%d-%d", round, won) {
				t.Fatalf("round %d: head is %q (%v), want node %d's", round, got, err, won)
			}
			if _, err := ns.Stat(t.Context(), "side", fmt.Sprintf("r%d-%d", round, 1-won)); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("round %d: the losing batch stored its other object (stat: %v)", round, err)
			}
		}
	}
}

// Writers on two nodes each read the head and replace it with a match on what they read,
// in a loop: every replacement that commits matched the one committed before it (one
// chain, no fork), and every refusal is ErrChanged.
func TestPGTwoNodesMatchChain(t *testing.T) {
	na, nb := matchNodes(t)
	putBytes(t, na, "", "head", []byte("0"))
	var mu sync.Mutex
	after := map[string]string{} // committed: content matched -> content written
	var wg sync.WaitGroup
	for w := range 6 {
		ns := []*Namespace{na, nb}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				cur, err := getBytes(t, ns, "", "head")
				if err != nil {
					t.Error(err)
					return
				}
				h := sha256.Sum256(cur)
				next := fmt.Sprintf("w%d-%d", w, i)
				err = ns.PutBatch(t.Context(), []storage.Object{{Name: "head", Data: []byte(next), Match: &h}})
				switch {
				case err == nil:
					mu.Lock()
					if prev, ok := after[string(cur)]; ok {
						t.Errorf("%q was replaced twice: by %q and by %q", cur, prev, next)
					}
					after[string(cur)] = next
					mu.Unlock()
				case !errors.Is(err, storage.ErrChanged):
					t.Errorf("writer %d: %v, want nil or ErrChanged", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Follow the chain from the first content: it visits every committed replacement and
	// ends at what is stored.
	cur, n := "0", 0
	for next, ok := after[cur]; ok; next, ok = after[cur] {
		cur, n = next, n+1
	}
	if n != len(after) {
		t.Fatalf("the chain from the first head has %d replacements of %d committed", n, len(after))
	}
	if got, err := getBytes(t, nb, "", "head"); err != nil || string(got) != cur {
		t.Fatalf("head is %q (%v), the chain ends at %q", got, err, cur)
	}
	t.Logf("%d replacements committed by 6 writers on two nodes", n)
	fsckClean(t, na.s)
}

func firstNonNilErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// sharedBlobDir is one blob directory opened twice: the blob stores of two nodes.
func sharedBlobDir(t *testing.T) (storage.Backend, storage.Backend) {
	t.Helper()
	dir := t.TempDir()
	la, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return la, lb
}
