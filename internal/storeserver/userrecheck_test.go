package storeserver

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storewire"
)

// A user removed through another node, and a new user given the same name there, are
// seen by a node that had the old account cached: the old credential is refused within
// userRecheck, and never reads the new account's names. Found deploying ('veil store user
// remove frank --dir' then 'user add frank --dir' while two nodes served): the old
// secret still listed the new frank's files on the node that had authenticated it
// before, until that node restarted.
func TestRemovedUserRefusedByOtherNode(t *testing.T) {
	defer func(d time.Duration) { userRecheck = d }(userRecheck)
	userRecheck = 200 * time.Millisecond
	a := newPGService(t, Config{})
	b := secondNode(t, a, Config{})
	_, oldCred := addUser(t, b, "frank")
	oldFrank, err := remote.New(serve(t, a), oldCred)
	if err != nil {
		t.Fatal(err)
	}
	defer oldFrank.Close()
	if _, err := oldFrank.List(t.Context(), ""); err != nil { // a caches the account
		t.Fatal(err)
	}
	if err := b.RemoveUser("frank"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * userRecheck)
	if _, err := oldFrank.List(t.Context(), ""); !errors.Is(err, storewire.ErrUnauthorized) {
		t.Fatalf("a removed user's list on the other node: %v (want unauthorized)", err)
	}
	newFrank, _ := addUser(t, b, "frank")
	putBytes(t, newFrank, "", "private", []byte("the new frank's"))
	got, err := oldFrank.List(t.Context(), "")
	if !errors.Is(err, storewire.ErrUnauthorized) {
		t.Fatalf("the removed frank's credential on the other node after a new frank: %v, %d names (want unauthorized)", err, len(got))
	}
	if rc, err := oldFrank.Get(t.Context(), "", "private"); err == nil {
		var buf bytes.Buffer
		buf.ReadFrom(rc)
		rc.Close()
		t.Fatalf("the removed frank read the new frank's file: %q", buf.String())
	}
}
