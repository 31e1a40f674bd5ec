package storeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// failBlobs fails every blob store commit of content whose first byte is 0xEE: an upload
// whose content never reaches the blob store after its quota reservation.
type failBlobs struct{ blobStore }

func (f failBlobs) commit(ctx context.Context, h blobID, tmp string, size int64) error {
	if b, err := readFirst(tmp); err == nil && b == 0xEE {
		return errors.New("blob store: injected failure")
	}
	return f.blobStore.commit(ctx, h, tmp, size)
}

func readFirst(path string) (byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var b [1]byte
	_, err = io.ReadFull(f, b[:])
	return b[0], err
}

// checkBooksEmpty fails unless no reservation nor claim is left in the service's books.
func checkBooksEmpty(t *testing.T, s *Service) {
	t.Helper()
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	if len(s.quota) != 0 || s.nHeld.Load() != 0 {
		for u, b := range s.quota {
			t.Errorf("user %s: %d claims of %d bytes, %d unbounded, %d reservations left", u, b.claims, b.claimed, b.unbound, len(b.held))
		}
		t.Fatalf("quota books not empty after every request ended: %d users, %d reservations", len(s.quota), s.nHeld.Load())
	}
}

// Every way a write can end (stored, refused by the quota, refused by its transaction,
// its group's other member refused, its blob store commit failed, a move growing or not,
// refused or not) gives back its reservation or claim exactly once: nothing stays in the
// books, for a user with a quota and one without, and nothing is left in the blob store.
func TestQuotaBooksEmptyAfterEveryOutcome(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		s.blobs = failBlobs{s.blobs}
		alice, _ := addUser(t, s, "alice", WithQuota(600<<10))
		bob, _ := addUser(t, s, "bob")
		for _, ns := range []*Namespace{alice, bob} {
			if err := ns.Put(t.Context(), "f", "file", bytes.NewReader([]byte("x")), 1); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for _, ns := range []*Namespace{alice, bob} {
			for i := range 24 {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a leaked move's claim: reservations wait
					defer cancel()
					big := randBytes(uint64(i+1), 90<<10)
					var err error
					switch i % 8 {
					case 0: // a large put, stored or refused by the quota
						err = ns.Put(ctx, fmt.Sprint("d", i%3), fmt.Sprint("big", i), bytes.NewReader(big), -1)
					case 1: // a large put whose blob store commit fails after its reservation
						big[0] = 0xEE
						err = ns.Put(ctx, "d0", fmt.Sprint("fail", i), bytes.NewReader(big), int64(len(big)))
					case 2: // a large put refused (a file is in its path): before its content
						// is stored for a user with a quota (bob's is an orphan for gc)
						if ns == alice {
							err = ns.Put(ctx, "f/file", "x", bytes.NewReader(big), -1)
						}
					case 3: // a batch refused by its condition, with a member of its group
						err = ns.PutBatch(ctx, []storage.Object{{Name: "f", Data: []byte("y"), Create: true},
							{Dir: "b", Name: fmt.Sprint(i), Data: []byte("z")}})
					case 4: // a move that lengthens names, and one back
						if err = ns.Move(ctx, "", "d1", "", "d1-longer-name"); err == nil {
							err = ns.Move(ctx, "", "d1-longer-name", "", "d1")
						}
					case 5: // a move that does not, refused (the name is taken)
						err = ns.Move(ctx, "", "d2", "", "f")
					case 6: // directories, and a small put
						if err = ns.Create(ctx, fmt.Sprint("m/", i)); err == nil {
							err = ns.Put(ctx, fmt.Sprint("m/", i), "s", bytes.NewReader([]byte("s")), 1)
						}
					case 7: // a batch with a large object, stored or refused by the quota
						err = ns.PutBatch(ctx, []storage.Object{{Dir: "d2", Name: fmt.Sprint("bb", i), Data: big},
							{Dir: "d2", Name: fmt.Sprint("bs", i), Data: []byte("s")}})
					}
					_ = err // any answer: the books are what is checked
				})
			}
		}
		wg.Wait()
		checkBooksEmpty(t, s)
		rep, err := s.Fsck(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() || rep.OrphanBlobs != 0 {
			t.Fatalf("fsck: %d orphan blobs, problems %v", rep.OrphanBlobs, rep.Problems)
		}
	})
}

// A large put its transaction would refuse whatever the quota (its name is a directory,
// or a file stands where its path needs a directory) is refused before its content
// reaches the blob store: before, each such put of a user with a quota left its content
// behind, an orphan until gc, so the user could fill the service's disk past their quota
// (any number of puts, each of up to their free quota), which the reservations exist to
// prevent.
func TestQuotaRefusedLinkLeavesNoOrphan(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		ns, _ := addUser(t, s, "alice", WithQuota(256<<10))
		if err := ns.Create(t.Context(), "d/sub"); err != nil {
			t.Fatal(err)
		}
		if err := ns.Put(t.Context(), "", "f", bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
		used, _, _ := accountOf(t, s, "alice")
		for i := range 4 { // 4 x 200 KiB: more than the quota
			for _, c := range []struct {
				dir, name string
				want      error
			}{{"d", "sub", storage.ErrIsDir}, {"f", "x", storage.ErrNotDir}, {"f/y", "x", storage.ErrNotDir}} {
				data := randBytes(uint64(100+i), 200<<10)
				for _, size := range []int64{-1, int64(len(data))} {
					if err := ns.Put(t.Context(), c.dir, c.name, bytes.NewReader(data), size); !errors.Is(err, c.want) {
						t.Fatalf("put %s/%s (size %d): %v, want %v", c.dir, c.name, size, err, c.want)
					}
				}
				err := ns.PutBatch(t.Context(), []storage.Object{{Dir: c.dir, Name: c.name, Data: data}})
				if !errors.Is(err, c.want) {
					t.Fatalf("batch %s/%s: %v, want %v", c.dir, c.name, err, c.want)
				}
			}
		}
		checkNoLeftovers(t, s, "alice", used)
	})
}

// A large put into a directory holding MaxDirEntries entries (or whose path would add an
// entry to one) is refused before its content reaches the blob store: before, each such
// put of a user with a quota left its content behind, any number of times.
func TestQuotaFullDirectoryLeavesNoOrphan(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{Limits: Limits{MaxDirEntries: 2}})
		ns, _ := addUser(t, s, "alice", WithQuota(256<<10))
		for _, p := range [][2]string{{"", "f"}, {"d", "a"}, {"d", "b"}} { // "" holds d and f
			if err := ns.Put(t.Context(), p[0], p[1], bytes.NewReader([]byte("x")), 1); err != nil {
				t.Fatal(err)
			}
		}
		used, _, _ := accountOf(t, s, "alice")
		for i, p := range [][2]string{{"d", "c"}, {"e", "c"}, {"d", "e"}} {
			data := randBytes(uint64(300+i), 200<<10) // 3 x 200 KiB: more than the quota
			if err := ns.Put(t.Context(), p[0], p[1], bytes.NewReader(data), -1); !errors.Is(err, storewire.ErrLimit) {
				t.Fatalf("put %s/%s, a new entry in a full directory: %v", p[0], p[1], err)
			}
			err := ns.PutBatch(t.Context(), []storage.Object{{Dir: p[0], Name: p[1], Data: data}})
			if !errors.Is(err, storewire.ErrLimit) {
				t.Fatalf("batch %s/%s, a new entry in a full directory: %v", p[0], p[1], err)
			}
		}
		checkNoLeftovers(t, s, "alice", used)
	})
}
