package storeserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/testutil"
)

const crashBatchObjects = 24

// crashBatch is batch g/i: its own directory, crashBatchObjects objects of 1-64 KiB (some
// with content other batches store too).
func crashBatch(g, i int) (string, []storage.Object) {
	dir := fmt.Sprintf("b%02d-%04d", g, i)
	objs := make([]storage.Object, crashBatchObjects)
	for k := range objs {
		seed, size := uint64(g<<24|i<<8|k), 1<<10+(g*7+i*13+k*31)%(63<<10)
		if k%6 == 5 {
			seed = 7 // duplicate content across batches
		}
		objs[k] = storage.Object{Dir: dir, Name: fmt.Sprintf("o%02d", k), Data: randBytes(seed, size)}
	}
	return dir, objs
}

// TestCrashMidBatch kills the server with SIGKILL while 8 clients send batch uploads and
// one batch is held half sent, restarts from the same directory, and checks: every
// acknowledged batch reads back whole; every batch directory visible is one a client sent,
// with all of its objects intact (a batch committed but not acknowledged before the kill
// may be visible, whole); the held batch is not visible at all; fsck is clean.
func TestCrashMidBatch(t *testing.T) {
	dir, cred, child, url, rb := startAliceChild(t)
	var mu sync.Mutex
	tried, acked := map[string][]storage.Object{}, map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	writeUntil(8, stop, &wg, func(g, i int) bool {
		d, objs := crashBatch(g, i)
		mu.Lock()
		tried[d] = objs
		mu.Unlock()
		if rb.PutBatch(context.Background(), objs) != nil {
			return false // the server is gone
		}
		mu.Lock()
		acked[d] = true
		mu.Unlock()
		return true
	})
	testutil.WaitFor(t, 60*time.Second, "40 acknowledged batches", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 40
	})
	// One batch held open with half its body sent: the server is reading it at the kill.
	held := make(chan error, 1)
	pr, pw := io.Pipe()
	go func() { held <- sendRawBatch(url, cred, pr) }()
	_, heldObjs := crashBatch(99, 0)
	for k := range heldObjs {
		heldObjs[k].Dir = "held"
	}
	body := storewire.AppendBatch(nil, heldObjs)
	pw.Write(body[:len(body)/2])
	child.Kill() // SIGKILL, mid-batch
	pw.CloseWithError(fmt.Errorf("server killed"))
	<-held
	close(stop)
	wg.Wait()
	rb.Close()
	t.Logf("%d batches acknowledged of %d sent before SIGKILL", len(acked), len(tried))

	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ns, _ := s.Namespace("alice")
	infos, err := ns.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	visible := map[string]bool{}
	for _, in := range infos {
		visible[in.Name] = true
		objs, ok := tried[in.Name]
		if !ok {
			t.Fatalf("%s is visible but no batch stored it", in.Name)
		}
		if names, _ := ns.List(t.Context(), in.Name); len(names) != len(objs) {
			t.Fatalf("batch %s is half visible: %d of %d objects (acknowledged: %v)", in.Name, len(names), len(objs), acked[in.Name])
		}
		for _, o := range objs {
			if got, err := getBytes(t, ns, o.Dir, o.Name); err != nil || !bytes.Equal(got, o.Data) {
				t.Fatalf("%s/%s: %v (intact: %v)", o.Dir, o.Name, err, err == nil && bytes.Equal(got, o.Data))
			}
		}
		if !acked[in.Name] {
			t.Logf("%s: committed just before the kill, unacknowledged, whole", in.Name)
		}
	}
	for d := range acked {
		if !visible[d] {
			t.Fatalf("acknowledged batch %s is lost", d)
		}
	}
	fsckClean(t, s)
}

// sendRawBatch posts a batch body from r (the remote client sends bodies it holds whole).
func sendRawBatch(url string, cred storewire.Credential, r io.Reader) error {
	pool, err := cred.CAPool()
	if err != nil {
		return err
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}}}
	req, err := http.NewRequest(http.MethodPost, url+"/v1/batch", r)
	if err != nil {
		return err
	}
	req.SetBasicAuth(cred.User, cred.Secret)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}
