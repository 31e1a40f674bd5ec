package storeserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/testutil"
)

// secondNode opens a copy of s's data directory (what docs/deploy.md tells an operator to
// do for each further node): same PostgreSQL, same blob store, its own temp files.
func secondNode(t *testing.T, s *Service, cfg Config) *Service {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(s.dir)); err != nil {
		t.Fatal(err)
	}
	cfg.BlobLocation = s.cfg.BlobLocation
	s2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2
}

// TestTwoNodesShareMetadata runs two services on one PostgreSQL and one S3 bucket. Two
// users write through both nodes at once, storing, overwriting and deleting names whose
// content (inline and in the bucket) they share, while both nodes run gc in a loop. At
// the end every name reads back its bytes through either node, fsck is clean, the bucket
// holds each distinct large content once, and a user added on one node works on the
// other.
func TestTwoNodesShareMetadata(t *testing.T) {
	srv := testutil.StartS3(t)
	bucket := srv.NewBucket(t, "blobs", "")
	a := newPGService(t, Config{Blobs: bucket})
	b := secondNode(t, a, Config{Blobs: bucket})
	addUser(t, a, "alice")
	addUser(t, a, "bob")
	contents := [][]byte{randBytes(1, 100<<10), randBytes(2, 70<<10), randBytes(3, 2000), randBytes(4, 300<<10), randBytes(5, 10)}
	var mu sync.Mutex
	var locks sync.Map
	want := map[string]int{} // user/dir/name -> content
	stop := make(chan struct{})
	var gcs atomic.Int64
	var bg sync.WaitGroup
	for _, s := range []*Service{a, b} {
		bg.Add(1)
		go gcUntil(t, s, stop, &gcs, &bg)
	}
	var writers sync.WaitGroup
	for g := range 8 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			node := []*Service{a, b}[g%2]
			user := []string{"alice", "bob"}[g/2%2]
			ns, err := node.Namespace(user)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 40 {
				dir, name := fmt.Sprintf("w%d", g/4), fmt.Sprintf("n%d", (g*7+i)%8)
				key := user + "/" + dir + "/" + name
				c := (g + i) % len(contents)
				kl, _ := locks.LoadOrStore(key, &sync.Mutex{}) // one writer per name at a time, so want stays exact
				kl.(*sync.Mutex).Lock()
				if i%5 == 4 {
					if err := ns.Delete(context.Background(), dir, name); err == nil {
						mu.Lock()
						delete(want, key)
						mu.Unlock()
					}
				} else if err := ns.Put(context.Background(), dir, name, bytes.NewReader(contents[c]), int64(len(contents[c]))); err != nil {
					t.Error(err)
				} else {
					mu.Lock()
					want[key] = c
					mu.Unlock()
				}
				kl.(*sync.Mutex).Unlock()
			}
		}()
	}
	writers.Wait()
	close(stop)
	bg.Wait()
	t.Logf("%d gc runs on two nodes raced %d names", gcs.Load(), len(want))
	for key, c := range want {
		user, rest, _ := strings.Cut(key, "/")
		dir, name, _ := strings.Cut(rest, "/")
		for _, s := range []*Service{a, b} {
			ns, _ := s.Namespace(user)
			got, err := getBytes(t, ns, dir, name)
			if err != nil || !bytes.Equal(got, contents[c]) {
				t.Fatalf("%s through %s: %v", key, s.dir, err)
			}
		}
	}
	if _, err := a.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	fsckClean(t, a)
	fsckClean(t, b)
	st := mustStats(t, b)
	if st.GarbageBlobs != 0 {
		t.Fatalf("garbage after gc: %+v", st)
	}
	// A user added through one node authenticates and writes through the other.
	_, cred := addUser(t, a, "carol")
	rb := remoteFor(t, serve(t, b), cred)
	putBytes(t, rb, "", "hello", []byte("from node b"))
	if got, err := getBytes(t, mustNS(t, a, "carol"), "", "hello"); err != nil || string(got) != "from node b" {
		t.Fatalf("carol's file through node a: %q %v", got, err)
	}
}

func mustNS(t *testing.T, s *Service, user string) *Namespace {
	t.Helper()
	ns, err := s.Namespace(user)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestPGHoldKeepsGCAway: content without references but pinned by an upload in flight
// (on any node) survives gc; once the pin is released and no name references it, gc
// removes it.
func TestPGHoldKeepsGCAway(t *testing.T) {
	s := newPGService(t, Config{})
	ns, _ := addUser(t, s, "alice")
	data := randBytes(9, 200<<10)
	putBytes(t, ns, "", "f", data)
	h := blobHash(t, s, "alice", "", "f")
	if err := ns.Delete(t.Context(), "", "f"); err != nil {
		t.Fatal(err)
	}
	pin, err := s.meta.hold(t.Context(), h, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := s.GC(t.Context()); err != nil || rep.Blobs != 0 {
		t.Fatalf("gc of a held blob: %+v %v", rep, err)
	}
	if _, _, err := s.blobs.open(t.Context(), blobID{h, pin.key}); err != nil {
		t.Fatalf("held content removed: %v", err)
	}
	pin.release()
	if rep, err := s.GC(t.Context()); err != nil || rep.Blobs != 1 {
		t.Fatalf("gc after release: %+v %v", rep, err)
	}
	if _, _, err := s.blobs.open(t.Context(), blobID{h, pin.key}); err == nil {
		t.Fatal("released garbage still stored")
	}
	fsckClean(t, s)
}

// TestSIGKILLNodeMidPut serves one PostgreSQL-backed store from two child processes (each
// a copy of the data directory, as docs/deploy.md says) and has 8 clients store files
// through a client given both endpoints, then SIGKILLs one node mid-run. A put that
// fails with the node is sent again (as DupLESS's uploads are) and reaches the other
// node; afterwards every acknowledged file reads back with its bytes through the
// survivor, and the store holds each distinct content once. (Content here is inline, at
// most 64 KiB, so the local blob directories of the two copies are not involved;
// TestTwoNodesShareMetadata covers content in a shared S3 bucket.)
func TestSIGKILLNodeMidPut(t *testing.T) {
	s := newPGService(t, Config{})
	_, cred := addUser(t, s, "alice")
	dir2 := t.TempDir()
	if err := os.CopyFS(dir2, os.DirFS(s.dir)); err != nil {
		t.Fatal(err)
	}
	victim, url1 := startChild(t, s.dir)
	_, url2 := startChild(t, dir2)
	rb, err := remote.NewMulti([]string{url1, url2}, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	content := func(i int) []byte { return randBytes(uint64(i%40), 1<<10+i%40*1000) } // 40 distinct, shared by names
	var acked sync.Map                                                                // name -> content index
	var n atomic.Int64
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				k := g*40 + i
				name := fmt.Sprintf("f%03d", k)
				data := content(k)
				var err error
				for try := 0; try < 3; try++ {
					if err = rb.Put(context.Background(), "d", name, bytes.NewReader(data), int64(len(data))); err == nil {
						break
					}
				}
				if err != nil {
					t.Errorf("put %s: %v", name, err)
					return
				}
				acked.Store(name, k)
				if n.Add(1) == 100 {
					once.Do(func() { victim.Kill(); close(killed) })
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatal("the node was never killed")
	}
	count := 0
	acked.Range(func(key, v any) bool {
		got, err := getBytes(t, rb, "d", key.(string))
		if err != nil || !bytes.Equal(got, content(v.(int))) {
			t.Fatalf("%s after the kill: %v", key, err)
		}
		count++
		return true
	})
	if count != 320 {
		t.Fatalf("%d files acknowledged, want 320", count)
	}
	st := mustStats(t, s)
	var want int64
	for i := range 40 {
		want += int64(len(content(i)))
	}
	if st.PhysicalBytes-st.GarbageBytes != want || st.Objects != 320 {
		t.Fatalf("stats %+v, want %d live physical bytes (each distinct content once)", st, want)
	}
	fsckClean(t, s)
}

// A batch of many objects in deep, distinct directories (more names than one statement
// takes parameters) commits on PostgreSQL.
func TestPGBigBatch(t *testing.T) {
	s := newPGService(t, Config{MaxBatchObjects: 3000})
	ns, _ := addUser(t, s, "alice")
	var objs []storage.Object
	for i := range 3000 { // 36,000 new names: 252,000 parameters to write them

		objs = append(objs, storage.Object{Dir: fmt.Sprintf("a%d/b/c/d/e/f/g/h/i/j/k", i), Name: "f", Data: []byte{byte(i)}})
	}
	if err := ns.PutBatch(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
	got, err := getBytes(t, ns, "a2999/b/c/d/e/f/g/h/i/j/k", "f")
	if err != nil || len(got) != 1 || got[0] != byte(2999%256) {
		t.Fatalf("%v %v", got, err)
	}
	fsckClean(t, s)
}
