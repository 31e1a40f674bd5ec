package storeserver

import (
	"bytes"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// fsckNoGarbage runs fsck and fails unless it is clean with no unreferenced blob.
func fsckNoGarbage(t *testing.T, s *Service, when string) FsckReport {
	t.Helper()
	rep, err := s.Fsck(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.GarbageBlobs != 0 || rep.OrphanBlobs != 0 {
		t.Fatalf("fsck %s: %d garbage blobs, %d orphans, problems %v", when, rep.GarbageBlobs, rep.OrphanBlobs, rep.Problems)
	}
	return rep
}

// An empty object (a DupLESS lock, put at the start of every client command and deleted
// at its end; a prune or forget mark) leaves no unreferenced blob behind: session 16's
// walkthrough found one 0-byte garbage blob per client run until gc. Through the HTTPS
// API, as the client sends them: a PUT and a batch object, read back, replaced both
// ways, deleted, and the user removed; fsck is clean with no garbage after each, without
// gc.
func TestEmptyObjectLeavesNoGarbage(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		_, cred := addUser(t, s, "alice")
		rb := remoteFor(t, serve(t, s), cred)
		putBytes(t, rb, ".veil/locks", "shared-1", nil)
		if got, err := getBytes(t, rb, ".veil/locks", "shared-1"); err != nil || len(got) != 0 {
			t.Fatalf("get of an empty object: %q %v", got, err)
		}
		fsckNoGarbage(t, s, "after an empty put")
		if err := rb.Delete(t.Context(), ".veil/locks", "shared-1"); err != nil {
			t.Fatal(err)
		}
		fsckNoGarbage(t, s, "after the empty object's delete")
		if err := rb.PutBatch(t.Context(), []storage.Object{{Dir: "m", Name: "mark", Data: []byte{}}, {Dir: "m", Name: "x", Data: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		putBytes(t, rb, "m", "mark", []byte("now something")) // empty replaced
		putBytes(t, rb, "m", "x", nil)                        // replaced by empty
		if err := rb.Delete(t.Context(), "m", "mark"); err != nil {
			t.Fatal(err)
		}
		if got, err := getBytes(t, rb, "m", "x"); err != nil || len(got) != 0 {
			t.Fatalf("get of an object replaced by an empty one: %q %v", got, err)
		}
		rep, err := s.GC(t.Context())
		if err != nil || rep.Blobs != 2 {
			t.Fatalf("gc: %+v %v, want the 2 replaced contents", rep, err)
		}
		fsckNoGarbage(t, s, "after replacements and gc")
		if err := s.RemoveUser("alice"); err != nil {
			t.Fatal(err)
		}
		fsckNoGarbage(t, s, "after removing the user")
	})
}

// A store written before session 16 recorded the empty content and counted its empty
// objects in it. It still reads, fsck accepts the count (no longer maintained), and its
// empty objects delete.
func TestEmptyObjectOlderRecord(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		ns, _ := addUser(t, s, "alice")
		putBytes(t, ns, "", "e", nil)
		putBytes(t, ns, "", "f", nil)
		err := s.meta.update(t.Context(), "alice", func(tx metaTx) error { // what an older put recorded
			if err := tx.incref(emptyContent, 0, []byte{}, 0); err != nil {
				return err
			}
			return tx.incref(emptyContent, 0, []byte{}, 0)
		})
		if err != nil {
			t.Fatal(err)
		}
		rep := fsckNoGarbage(t, s, "with an older record of the empty content")
		if rep.Blobs != 1 {
			t.Fatalf("fsck counts %d blobs, want the older record", rep.Blobs)
		}
		if got, err := getBytes(t, ns, "", "e"); err != nil || !bytes.Equal(got, []byte{}) {
			t.Fatalf("get: %q %v", got, err)
		}
		if err := ns.Delete(t.Context(), "", "e"); err != nil {
			t.Fatal(err)
		}
		fsckNoGarbage(t, s, "after deleting an empty object of an older store")
	})
}
