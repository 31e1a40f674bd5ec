package vserver

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// TestRefusedChunkRemovalFailureSettled: when this server cannot remove the pairs of a
// chunk the K-server refused (here its state file is closed under it), they are still
// marked unacknowledged, so the settling loop removes them (it is woken), and the 500
// answer says so and carries Veil-Peekaboo-Unacked (clients add no guess). It said the
// pairs "stay listed here, never matching: unpublish them", from before such pairs were
// settled. (local.TestRefusedChunkNotKept: the removal that works.)
func TestRefusedChunkRemovalFailureSettled(t *testing.T) {
	kdir, vdir := t.TempDir(), t.TempDir()
	if err := kserver.Init(kdir, kserver.InitOptions{Endpoint: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	rc, err := os.ReadFile(filepath.Join(kdir, kserver.FileRelayCred))
	if err != nil {
		t.Fatal(err)
	}
	if err := Init(vdir, InitOptions{RelayCred: rc, Endpoint: "https://127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(vdir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	pairs := make([]wire.PublishPair, 2)
	for i := range pairs {
		rand.Read(pairs[i].ID[:])
		pairs[i].Value = []byte("v")
	}
	if err := storePairs(s.db, "alice", pairs); err != nil {
		t.Fatal(err)
	}
	s.db.Close() // the removal fails
	w := httptest.NewRecorder()
	code, err := s.refusedChunk(w, "alice", pairs, wire.StatusMalformed)
	want := "this V-server lists the chunk's 2 pairs as unacknowledged and removes them from both servers"
	if code != http.StatusInternalServerError || err == nil || !strings.Contains(err.Error(), "removing them here failed (database not open)") ||
		!strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "never matching") || w.Header().Get(wire.HeaderUnacked) != "settling" {
		t.Fatalf("refused chunk whose pairs could not be removed: %d %v, header %q; want 500 saying %q", code, err, w.Header().Get(wire.HeaderUnacked), want)
	}
	select {
	case <-s.settle.wake:
	default:
		t.Fatal("the settling loop was not woken")
	}
	s.mix.close()
	s, err = Open(vdir, Config{}) // the marks the settling loop works from are there
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.db.View(func(tx *bbolt.Tx) error {
		for _, p := range pairs {
			if tag := tx.Bucket(bucketUnacked).Get(p.ID[:]); string(tag) != string(pairs[0].ID[:]) {
				t.Fatalf("pair %x: unacknowledged mark %x, want the chunk's tag", p.ID, tag)
			}
		}
		return nil
	})
}
