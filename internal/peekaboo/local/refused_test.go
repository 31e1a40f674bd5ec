package local

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// TestRefusedChunkNotKept: a publication whose chunk the K-server refuses (here sealed to
// another K-server key: a credential from a K-server made again) leaves none of its pairs
// on the V-server, and says so. The V-server stored them before relaying and kept them:
// listed like any other pair, never matching. The K-server stores a chunk whole or not at
// all, so none of them is there.
func TestRefusedChunkNotKept(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	ctx := context.Background()
	alice := newClient(t, d, "alice")
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "kept.pdf", Value: []byte("host-a:/kept")}}, 0, nil); err != nil {
		t.Fatal(err)
	}

	var uc wire.UserCred
	if err := json.Unmarshal(mustCred(t, alice), &uc); err != nil {
		t.Fatal(err)
	}
	other, err := wire.GenerateKServerKey()
	if err != nil {
		t.Fatal(err)
	}
	uc.KServerKey = base64.StdEncoding.EncodeToString(other.Public().Marshal())
	stale, _ := json.Marshal(uc)
	sc, err := client.New(stale)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	n, err := sc.Publish(ctx, []client.Pair{{Key: "refused-1.pdf", Value: []byte("v1")}, {Key: "refused-2.pdf", Value: []byte("v2")}}, 0, nil)
	t.Logf("publication sealed to another key: %d, %v", n, err)
	if err == nil || n != 0 || !strings.Contains(err.Error(), "k-server refused the chunk") || !strings.Contains(err.Error(), "none of its pairs was kept") {
		t.Fatalf("publication sealed to another K-server key: %d, %v", n, err)
	}
	l, err := alice.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 || l[0].Key != "kept.pdf" {
		var keys []string
		for _, p := range l {
			keys = append(keys, p.Key)
		}
		t.Fatalf("after a refused chunk alice lists %q; want only kept.pdf", keys)
	}
	if r := search(t, alice, "kept.pdf", client.SearchOptions{}); len(r.Found) != 1 {
		t.Fatalf("the pair published before: %d results", len(r.Found))
	}
}
