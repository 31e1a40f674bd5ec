package keyserver

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Concurrent 'client add' (and revoke, and veil serve's user additions) each read
// clients.json, changed it and wrote it back whole: all but one update were lost (found
// by review: 8 parallel adds left 1-2 clients registered, their credentials issued).
func TestConcurrentClientAddsAllRegistered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ks")
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := AddClient(dir, fmt.Sprintf("c%d", i), AddOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	cs, err := ListClients(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != n {
		t.Fatalf("%d clients issued credentials, %d registered: %v", n, len(cs), cs)
	}
}
