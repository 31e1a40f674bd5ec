package oblivisync

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Writer A stalls mid-epoch (suspended laptop, SIGSTOP, NFS stall) longer than its lease
// TTL; B takes over the expired lease as the design allows and commits a file. Resuming,
// A must stop, not finish its epoch. Found by review: A rewrote the lease as its own and
// its superblock over B's, so B's committed file vanished and A kept running.
func TestStalledWriterStopsAfterTakeover(t *testing.T) {
	dir := newBackend(t, 16, 16<<10, 2)
	stA, stB := t.TempDir(), t.TempDir()
	a := openW(t, dir, stA)
	defer a.Close()

	stall, resume := make(chan struct{}), make(chan struct{})
	var resumed sync.Once
	release := func() { resumed.Do(func() { close(resume) }) }
	var first atomic.Bool
	TestOnlyAfterBackendWrite = func(epoch uint64, n int) {
		if first.CompareAndSwap(false, true) { // only A's first epoch stalls
			close(stall)
			<-resume
		}
	}
	defer func() { TestOnlyAfterBackendWrite = nil }()
	// A failure below must not leave A stalled: the deferred a.Close waits for its epoch,
	// and the test would hang until go test's timeout without saying what failed.
	defer release()
	aDone := make(chan error, 1)
	go func() { _, err := a.Sync(); aDone <- err }()
	select {
	case <-stall:
	case err := <-aDone:
		t.Fatalf("A's epoch ended before it wrote a backend file: %v", err)
	}

	// A's lease has expired meanwhile (renewed more than a TTL ago).
	old := *a.lease
	old.Renewed = time.Now().Add(-DefaultLeaseTTL - time.Second)
	if err := a.be.renewLease(&old); err != nil {
		t.Fatal(err)
	}
	b := openW(t, dir, stB) // takes over the expired lease
	f := must(b.Create(rootIno, "from-b", 0o644, 0, 0))
	must(b.Write(f.Ino, 0, []byte("acknowledged and synced by B")))
	drain(t, b, 100)
	r := must(OpenReader(dir, testPass))
	if _, err := r.Lookup(rootIno, "from-b"); err != nil {
		t.Fatalf("B's file not committed: %v", err)
	}

	release()
	errA := <-aDone
	r2 := must(OpenReader(dir, testPass))
	_, lerr := r2.Lookup(rootIno, "from-b")
	if errA == nil || lerr != nil {
		t.Fatalf("stalled writer A finished its epoch after B took over (A's Sync err=%v); B's committed file now: %v", errA, lerr)
	}
}
