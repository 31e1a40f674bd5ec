package storeserver

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// TestGCRacesUploads runs gc in a loop while writers keep storing, overwriting and deleting
// names whose content other writers share: gc must never remove content an upload is
// about to reference. At the end every name reads back its bytes and fsck is clean.
func TestGCRacesUploads(t *testing.T) {
	forEachMeta(t, testGCRacesUploads)
}

func testGCRacesUploads(t *testing.T, newService func(testing.TB, Config) *Service) {
	s := newService(t, Config{})
	ns, _ := addUser(t, s, "alice")
	contents := [][]byte{randBytes(1, 100<<10), randBytes(2, 70<<10), randBytes(3, 2000), randBytes(4, 300<<10)}
	var mu sync.Mutex
	want := map[string]int{}
	stop := make(chan struct{})
	var gcs atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go gcUntil(t, s, stop, &gcs, &wg)
	var writers sync.WaitGroup
	for g := range 6 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 60 {
				name := fmt.Sprintf("n%d", (g*7+i)%10)
				dir := fmt.Sprintf("g%d", g)
				c := (g + i) % len(contents)
				if i%4 == 3 {
					if err := ns.Delete(context.Background(), dir, name); err == nil {
						mu.Lock()
						delete(want, dir+"/"+name)
						mu.Unlock()
					}
					continue
				}
				var err error
				if i%4 == 2 { // in a batch: content over 64 KiB is its one large object
					err = ns.PutBatch(context.Background(), []storage.Object{{Dir: dir, Name: name, Data: contents[c]}})
				} else {
					err = ns.Put(context.Background(), dir, name, bytes.NewReader(contents[c]), int64(len(contents[c])))
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[dir+"/"+name] = c
				mu.Unlock()
			}
		}()
	}
	writers.Wait()
	time.Sleep(10 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d gc runs raced %d names", gcs.Load(), len(want))
	for p, c := range want {
		dir, name := p[:2], p[3:]
		got, err := getBytes(t, ns, dir, name)
		if err != nil || !bytes.Equal(got, contents[c]) {
			t.Fatalf("%s: %v", p, err)
		}
	}
	fsckClean(t, s)
}

// gcUntil runs s.GC in a loop, counting the runs in n, until stop is closed or a run fails
// (reported with t.Error); then it calls wg.Done.
func gcUntil(t *testing.T, s *Service, stop <-chan struct{}, n *atomic.Int64, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := s.GC(context.Background()); err != nil {
			t.Error(err)
			return
		}
		n.Add(1)
	}
}
