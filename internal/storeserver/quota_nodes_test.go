package storeserver

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// Quota reservations are shared by the nodes on one PostgreSQL (veil_reserved, schema
// version 4). While a large put reserved on node a is between its reservation and its
// transaction (its content in the bucket), node b refuses a large put that fits the
// quota only without it, before any of its content reaches the bucket, and a batch of
// small objects that fits only without it; a small put that fits with it is stored; a's
// put then commits. Before, each node saw its own reservations only: b stored its large
// put, and a's, its content already uploaded, was refused by its transaction (its upload
// wasted, up to one reservation per node beyond the quota in the bucket meanwhile;
// session 14's TestPGTwoNodesQuotaRaceLeavesNoOrphan).
func TestPGTwoNodesShareReservations(t *testing.T) {
	bucket := testutil.StartS3(t).NewBucket(t, "blobs", "")
	a := newPGService(t, Config{Blobs: bucket})
	nsA, _ := addUser(t, a, "alice", WithQuota(512<<10))
	b := secondNode(t, a, Config{Blobs: bucket})
	nsB := mustNS(t, b, "alice")
	commitsB := &countBlobs{blobStore: b.blobs}
	b.blobs = commitsB
	// A reservation whose node died (its lease ran out) holds nothing.
	pool := a.meta.(*pgMeta).pool
	if _, err := pool.Exec(t.Context(), `INSERT INTO veil_reserved VALUES ('alice', 7, 400000, now() - INTERVAL '1 second')`); err != nil {
		t.Fatal(err)
	}
	p := newPauseBlobs(a, false)
	done := make(chan error, 1)
	go func() { done <- nsA.Put(t.Context(), "", "a", bytes.NewReader(randBytes(31, 300<<10)), 300<<10) }()
	p.wait(t) // reserved on node a, its content in the bucket, its transaction to come

	err := nsB.Put(t.Context(), "", "b", bytes.NewReader(randBytes(32, 300<<10)), 300<<10)
	if !errors.Is(err, storage.ErrQuota) || commitsB.n.Load() != 0 {
		t.Fatalf("node b's large put: %v, %d blob store commits; want %v before any", err, commitsB.n.Load(), storage.ErrQuota)
	}
	var objs []storage.Object
	for i := range 4 {
		objs = append(objs, storage.Object{Name: fmt.Sprint("s", i), Data: randBytes(uint64(40+i), 60<<10)})
	}
	if err := nsB.PutBatch(t.Context(), objs); !errors.Is(err, storage.ErrQuota) {
		t.Fatalf("node b's batch of 240 KiB: %v, want %v", err, storage.ErrQuota)
	}
	putBytes(t, nsB, "", "small", randBytes(33, 60<<10)) // fits with a's reservation

	close(p.resume)
	if err := <-done; err != nil {
		t.Fatalf("the put reserved on node a: %v", err)
	}
	checkNoLeftovers(t, a, "alice", 360<<10)
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM veil_reserved`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("reservations left: %d %v (the expired one is deleted by the next reservation)", n, err)
	}
}

// gc deletes the reservations whose lease ran out, of every user: before, only the user's
// next reservation did, so the rows of a user who never reserved again (or was removed)
// stayed. A live reservation stays.
func TestPGGCSweepsExpiredReservations(t *testing.T) {
	s := newPGService(t, Config{})
	addUser(t, s, "alice")
	pool := s.meta.(*pgMeta).pool
	for _, q := range []string{
		`INSERT INTO veil_reserved VALUES ('alice', 1, 400000, now() - INTERVAL '1 second')`,
		`INSERT INTO veil_reserved VALUES ('gone', 2, 400000, now() - INTERVAL '1 hour')`, // a removed user's
		`INSERT INTO veil_reserved VALUES ('alice', 3, 1000, now() + INTERVAL '1 hour')`,
	} {
		if _, err := pool.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	ids, err := collectInt64(pool.Query(t.Context(), `SELECT id FROM veil_reserved ORDER BY id`))
	if err != nil || len(ids) != 1 || ids[0] != 3 {
		t.Fatalf("reservations after gc: %v %v, want the live one (3)", ids, err)
	}
}
