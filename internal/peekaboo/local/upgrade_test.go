package local

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
)

// TestSearchRightAfterUpgrade: a K-server whose kserver.db was written by a veil that kept
// no replay high-water mark (no meta/replay, no bucket replay: docs/formats/
// peekaboo-state.md) answers a search right after the upgrade; before, it refused every
// query for one replay window (10 min). A private search stays refused until then (that
// veil answered private queries stamped up to 10 min ahead), with an error saying so.
func TestSearchRightAfterUpgrade(t *testing.T) {
	dir, vaddr, cred, _ := publishedThenStopped(t, "uma")
	db, err := bbolt.Open(filepath.Join(dir, "kserver", kserver.FileDB), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error { // the layout before the mark
		if err := tx.Bucket([]byte("meta")).Delete([]byte("replay")); err != nil {
			return err
		}
		return tx.DeleteBucket([]byte("replay"))
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	startChild(t, dir, vaddr)
	c, _ := client.New(cred)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r, err := c.Search(ctx, "kept", client.SearchOptions{}); err != nil || len(r.Found) != 1 {
		t.Fatalf("search right after the upgrade: %v", err)
	}
	_, err = c.PrivateSearch(ctx, "kept", client.SearchOptions{})
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "upgraded") {
		t.Fatalf("private search within a replay window of the upgrade: %v", err)
	}
}
