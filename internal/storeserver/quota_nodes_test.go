package storeserver

import (
	"bytes"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// Quota reservations are per node: a large put reserved on one node can be refused by
// its transaction for the quota when another node stored meanwhile what the first did
// not see. Its content no longer stays behind (an orphan until gc): the refused upload
// removes it (metaStore.discard). Two nodes on one PostgreSQL and one S3 bucket.
func TestPGTwoNodesQuotaRaceLeavesNoOrphan(t *testing.T) {
	bucket := testutil.StartS3(t).NewBucket(t, "blobs", "")
	a := newPGService(t, Config{Blobs: bucket})
	nsA, _ := addUser(t, a, "alice", WithQuota(512<<10))
	b := secondNode(t, a, Config{Blobs: bucket})
	nsB := mustNS(t, b, "alice")
	p := newPauseBlobs(a, false)
	done := make(chan error, 1)
	go func() { done <- nsA.Put(t.Context(), "", "a", bytes.NewReader(randBytes(31, 300<<10)), 300<<10) }()
	p.wait(t) // reserved on node a, its content in the bucket, its transaction to come
	if err := nsB.Put(t.Context(), "", "b", bytes.NewReader(randBytes(32, 300<<10)), 300<<10); err != nil {
		t.Fatal(err) // node b does not see node a's reservation
	}
	close(p.resume)
	if err := <-done; !errors.Is(err, storage.ErrQuota) {
		t.Fatalf("the put reserved on node a: %v, want %v", err, storage.ErrQuota)
	}
	checkNoLeftovers(t, a, "alice", 300<<10)
}
