package storeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// gateBlobs holds every blob store commit until gate is closed, saying on started
// (once) that one is waiting.
type gateBlobs struct {
	blobStore
	started chan struct{}
	once    sync.Once
	gate    chan struct{}
}

func (g *gateBlobs) commit(ctx context.Context, h blobID, tmp string, size int64) error {
	g.once.Do(func() { close(g.started) })
	<-g.gate
	return g.blobStore.commit(ctx, h, tmp, size)
}

// usedBy is the user's content bytes as the service counts them.
func usedBy(t *testing.T, s *Service, user string) int64 {
	t.Helper()
	infos, err := s.Users()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range infos {
		if u.Name == user {
			return u.Used
		}
	}
	t.Fatalf("no user %q", user)
	return 0
}

// checkNoLeftovers fails unless fsck finds the store consistent, with no content that no
// file references, and the user's usage is exactly want.
func checkNoLeftovers(t *testing.T, s *Service, user string, want int64) {
	t.Helper()
	rep, err := s.Fsck(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.OrphanBlobs != 0 || rep.GarbageBlobs != 0 || rep.StaleUploads != 0 {
		t.Fatalf("fsck: %d orphan blobs, %d garbage blobs, %d stale uploads, problems %v",
			rep.OrphanBlobs, rep.GarbageBlobs, rep.StaleUploads, rep.Problems)
	}
	if got := usedBy(t, s, user); got != want {
		t.Fatalf("user %s uses %d bytes, the acknowledged puts stored %d", user, got, want)
	}
}

// Small puts (single PUTs, batches, directories) that run while a large put is between
// its quota reservation and its transaction leave room for it: before, they took the
// quota it had been granted, its transaction was refused after its content was committed
// to the blob store, and the content was left behind (an orphan of up to the free quota).
// The large put arrives as a PUT and as the large object of a batch.
func TestQuotaSmallPutsHonourReservation(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		for _, via := range []string{"put", "batch"} {
			t.Run(via, func(t *testing.T) {
				s := newService(t, Config{})
				g := &gateBlobs{blobStore: s.blobs, started: make(chan struct{}), gate: make(chan struct{})}
				s.blobs = g
				ns, _ := addUser(t, s, "alice", WithQuota(256<<10))
				big := randBytes(1, 100<<10)
				bigErr := make(chan error, 1)
				go func() {
					if via == "put" {
						bigErr <- ns.Put(t.Context(), "", "big", bytes.NewReader(big), int64(len(big)))
					} else {
						bigErr <- ns.PutBatch(t.Context(), []storage.Object{{Name: "big", Data: big}, {Name: "tag", Data: []byte("x")}})
					}
				}()
				<-g.started // reserved; its content is on its way to the blob store
				var stored atomic.Int64
				var wg sync.WaitGroup
				for i := range 24 { // 96 KiB of single puts, 80 KiB in batches: 176 KiB
					wg.Go(func() {
						err := ns.Put(t.Context(), "s", fmt.Sprint(i), bytes.NewReader(randBytes(uint64(10+i), 4<<10)), 4<<10)
						if err == nil {
							stored.Add(4 << 10)
						} else if !errors.Is(err, storage.ErrQuota) {
							t.Error(err)
						}
					})
				}
				for i := range 2 {
					wg.Go(func() {
						var objs []storage.Object
						for j := range 10 {
							objs = append(objs, storage.Object{Dir: fmt.Sprint("b", i), Name: fmt.Sprint(j), Data: randBytes(uint64(100+10*i+j), 4<<10)})
						}
						err := ns.PutBatch(t.Context(), objs)
						if err == nil {
							stored.Add(40 << 10)
						} else if !errors.Is(err, storage.ErrQuota) {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				close(g.gate)
				if err := <-bigErr; err != nil {
					t.Fatalf("the large put, reserved before the small ones: %v", err)
				}
				want := stored.Load() + int64(len(big))
				if via == "batch" {
					want++
				}
				checkNoLeftovers(t, s, "alice", want)
			})
		}
	})
}

// Many large and small puts racing near the quota leave nothing behind and are counted
// exactly: the usage is the sum of the acknowledged puts, within the quota.
func TestQuotaConcurrentMixedPuts(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		const quota = 512 << 10
		ns, _ := addUser(t, s, "alice", WithQuota(quota))
		var stored atomic.Int64
		var wg sync.WaitGroup
		for i := range 32 {
			size := 4 << 10
			if i%4 == 0 {
				size = 90 << 10
			}
			wg.Go(func() {
				data := randBytes(uint64(1000+i), size)
				var err error
				if i%3 == 0 {
					err = ns.PutBatch(t.Context(), []storage.Object{{Dir: "d", Name: fmt.Sprint(i), Data: data}})
				} else {
					err = ns.Put(t.Context(), "d", fmt.Sprint(i), bytes.NewReader(data), -1)
				}
				if err == nil {
					stored.Add(int64(size))
				} else if !errors.Is(err, storage.ErrQuota) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if stored.Load() > quota {
			t.Fatalf("%d bytes acknowledged, quota %d", stored.Load(), quota)
		}
		checkNoLeftovers(t, s, "alice", stored.Load())
	})
}

// A large put whose content fits the quota but not with its name and the directories it
// makes is refused before its content reaches the blob store: before, the reservation
// counted the content only, the transaction refused the put, and each such put left its
// content behind (any number of orphans, one per put).
func TestQuotaReservationCountsNames(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		const quota = 100 << 10
		ns, _ := addUser(t, s, "alice", WithQuota(quota))
		for i, size := range []int64{-1, quota - 10} { // unknown, declared
			data := randBytes(uint64(i), quota-10)
			err := ns.Put(t.Context(), "a/b", fmt.Sprint("big", i), bytes.NewReader(data), size)
			if !errors.Is(err, storage.ErrQuota) {
				t.Fatalf("a put whose name does not fit (size %d): %v", size, err)
			}
			err = ns.PutBatch(t.Context(), []storage.Object{{Dir: "c", Name: fmt.Sprint("big", i), Data: data}})
			if !errors.Is(err, storage.ErrQuota) {
				t.Fatalf("a batch whose name does not fit: %v", err)
			}
		}
		checkNoLeftovers(t, s, "alice", 0)
	})
}

// BenchmarkQuotaClaim is what quota reservations add to an inline put of a user with a
// quota (claim, the transaction's heldBy, release), 16 puts at once, without the put:
// go test ./internal/storeserver -run '^$' -bench QuotaClaim
func BenchmarkQuotaClaim(b *testing.B) {
	s := newTestService(b, Config{})
	ns, _ := addUser(b, s, "bench", WithQuota(1<<40))
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := ns.claim(claimCost("d", "name", 4096))
			s.heldBy("bench", nil)
			c.release()
		}
	})
}

// accountOf is the user's content and metadata bytes, as the transaction checks them.
func accountOf(t *testing.T, s *Service, user string) (used, meta, quota int64) {
	t.Helper()
	err := s.meta.view(t.Context(), func(tx metaTx) error {
		u, m, _, err := tx.account(user)
		used, meta, quota = u.used, m, u.quota
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return used, meta, quota
}

// A move that lengthens every name below a directory, checked before a large put's
// reservation and committed after that reservation read the usage, does not take the
// quota the reservation granted: the reservation waits for the move. Before, the large
// put's transaction was refused after its content reached the blob store (an orphan).
// The move's transaction is held open by a member of its group commit.
func TestQuotaMoveBeforeReservation(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		g := &gateBlobs{blobStore: s.blobs, started: make(chan struct{}), gate: make(chan struct{})}
		s.blobs = g
		ns, _ := addUser(t, s, "alice", WithQuota(256<<10))
		var objs []storage.Object
		for i := range 200 {
			objs = append(objs, storage.Object{Dir: "d", Name: fmt.Sprint(i), Data: []byte{1}})
		}
		if err := ns.PutBatch(t.Context(), objs); err != nil {
			t.Fatal(err)
		}
		longer := "d" + strings.Repeat("x", 100) // 200 names grow by 100 bytes: 20,000 bytes
		used, meta, quota := accountOf(t, s, "alice")
		big := randBytes(2, int(quota-used-meta-10_000)) // fits, not with the move
		hold := func(gate <-chan struct{}, in chan<- struct{}) chan error {
			done := make(chan error, 1)
			go func() {
				done <- s.meta.update(context.Background(), "alice", func(metaTx) error {
					if in != nil {
						in <- struct{}{}
					}
					<-gate
					return nil
				})
			}()
			return done
		}
		gate0, gate1, in := make(chan struct{}), make(chan struct{}), make(chan struct{}, 2)
		first := hold(gate0, in) // keeps the group commit busy
		<-in
		moved := make(chan error, 1)
		go func() { moved <- ns.Move(t.Context(), "", "d", "", longer) }()
		time.Sleep(50 * time.Millisecond) // the move queues first,
		second := hold(gate1, in)         // then the member that holds its group open
		time.Sleep(50 * time.Millisecond)
		close(gate0)
		<-in // the move's transaction has checked the quota, and is not committed
		bigErr := make(chan error, 1)
		go func() { bigErr <- ns.Put(t.Context(), "", "big", bytes.NewReader(big), int64(len(big))) }()
		select { // before: reserved at once; now: waits for the move
		case <-g.started:
		case <-time.After(time.Second):
		}
		close(gate1)
		for _, ch := range []chan error{first, second, moved} {
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
		close(g.gate)
		if err := <-bigErr; !errors.Is(err, storage.ErrQuota) {
			t.Fatalf("the large put that does not fit with the move: %v", err)
		}
		checkNoLeftovers(t, s, "alice", 200)
	})
}

// BenchmarkQuotaReserve is a large put's quota reservation (its read of the usage and
// the names it adds, in PostgreSQL), 16 at once by 8 users: go test
// ./internal/storeserver -run '^$' -bench QuotaReserve
func BenchmarkQuotaReserve(b *testing.B) {
	s := newPGService(b, Config{})
	var nss []*Namespace
	for i := range 8 {
		ns, _ := addUser(b, s, fmt.Sprint("u", i), WithQuota(1<<40))
		nss = append(nss, ns)
	}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ns := nss[n.Add(1)%int64(len(nss))]
		for pb.Next() {
			if _, err := ns.reserve(context.Background(), "d", "name", 1<<20, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
