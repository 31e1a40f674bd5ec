package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/testutil"
)

// TestPrivateQueryTableHeals makes the two tables differ as crashes between the two
// servers' commits would (the V-server lost entries the K-server committed; the K-server
// kept an entry the V-server removed), restarts, and checks that the V-server's table sync
// repairs its replica from the K-server's: every key is found again, the K-only pair
// matches but has no value to release.
func TestPrivateQueryTableHeals(t *testing.T) {
	dir := t.TempDir()
	d := start(t, dir, privateOpts())
	ctx := context.Background()
	alice := newClient(t, d, "alice")
	var pairs []client.Pair
	for i := 0; i < 30; i++ {
		pairs = append(pairs, client.Pair{Key: "heal-" + string(rune('a'+i)), Value: []byte{'v', byte('a' + i)}})
	}
	if _, err := alice.Publish(ctx, pairs, 0, nil); err != nil {
		t.Fatal(err)
	}
	cred := credOf[alice]
	stop(t, d)

	// The V-server loses the entries of every third pair; the K-server gains a ghost.
	lost := 0
	edit(t, filepath.Join(d.VDir, vserver.FileDB), func(b *bbolt.Bucket) {
		var ids [][]byte
		i := 0
		b.ForEach(func(k, _ []byte) error {
			if i%3 == 0 {
				ids = append(ids, bytes.Clone(k))
			}
			i++
			return nil
		})
		for _, k := range ids {
			b.Delete(k)
		}
		lost = len(ids)
	})
	ghost := pir.Derive("ghost.txt").Seal([16]byte{0xee})
	edit(t, filepath.Join(d.KDir, kserver.FileDB), func(b *bbolt.Bucket) {
		v := append([]byte{byte(ghost.Hash >> 24), byte(ghost.Hash >> 16), byte(ghost.Hash >> 8), byte(ghost.Hash)}, ghost.Slot[:]...)
		b.Put(bytes.Repeat([]byte{0xee}, 16), v)
	})
	if lost == 0 {
		t.Fatal("nothing removed")
	}

	d = start(t, dir, privateOpts())
	c, err := client.New(cred)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := d.V.SyncPIR(ctx); err != nil { // the start-up sync may have run already
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "tables equal", func() bool {
		n, err := d.V.SyncPIR(ctx)
		return err == nil && n == 0
	})
	for _, p := range pairs {
		r, err := c.PrivateSearch(ctx, p.Key, client.SearchOptions{})
		if err != nil || len(r.Found) != 1 || !bytes.Equal(r.Found[0].Value, p.Value) {
			t.Fatalf("%q after the sync: %v %v", p.Key, r, err)
		}
	}
	if r, err := c.PrivateSearch(ctx, "ghost.txt", client.SearchOptions{}); err != nil || len(r.Found) != 0 {
		t.Fatalf("ghost: %v %v", r, err)
	}
}

func edit(t *testing.T, path string, fn func(b *bbolt.Bucket)) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error {
		fn(tx.Bucket(pir.BucketName))
		// As a commit of the K-server itself (kserver.db's meta/writer): an edit by anything
		// else reads as an older veil's open, after which private queries wait a window.
		if m := tx.Bucket([]byte("meta")); m != nil && m.Get([]byte("writer")) != nil {
			return m.Put([]byte("writer"), binary.BigEndian.AppendUint64(nil, uint64(tx.ID())))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
