package storeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/testutil"
)

// TestMain lets the test binary act as 'veil store serve' (same store.Run) in a child
// process, so the crash test can SIGKILL a real server mid-upload.
func TestMain(m *testing.M) {
	if dir := os.Getenv("VEIL_STORE_TEST_SERVE"); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := Run(ctx, dir, os.Getenv("VEIL_STORE_TEST_ADDR"), Config{}, nil)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	testutil.StopSharedPostgres()
	os.Exit(code)
}

// startChild serves dir from a child process and returns it with its https URL.
func startChild(t *testing.T, dir string) (*testutil.Process, string) {
	addr := testutil.Addr(testutil.FreePort(t))
	t.Setenv("VEIL_STORE_TEST_SERVE", dir)
	t.Setenv("VEIL_STORE_TEST_ADDR", addr)
	p := testutil.Start(t, os.Args[0], "-test.run=^$")
	os.Unsetenv("VEIL_STORE_TEST_SERVE")
	testutil.WaitTCP(t, addr, 20*time.Second)
	return p, "https://" + addr
}

// startAliceChild initialises a store in a fresh directory with the user alice, serves it
// from a child process (startChild) and returns the directory, alice's credential, the
// child, its URL and alice's client.
func startAliceChild(t *testing.T) (dir string, cred storewire.Credential, child *testutil.Process, url string, rb *remote.Backend) {
	t.Helper()
	dir = t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	cred, err := AddUser(dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	child, url = startChild(t, dir)
	if rb, err = remote.New(url, cred); err != nil {
		t.Fatal(err)
	}
	return dir, cred, child, url, rb
}

// writeUntil starts n writers on wg: writer g calls write(g, 0), write(g, 1), ... until
// write returns false (the server is gone) or stop is closed.
func writeUntil(n int, stop <-chan struct{}, wg *sync.WaitGroup, write func(g, i int) bool) {
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if !write(g, i) {
					return
				}
			}
		}()
	}
}

type attempt struct {
	seed uint64
	size int
}

// TestCrashMidUpload kills the server with SIGKILL while 16 clients upload, restarts from
// the same directory, and checks: every acknowledged upload reads back intact; every
// visible name is one a client tried to store, with exactly its bytes (an upload the server
// committed but could not acknowledge before dying may be visible, whole); fsck is clean;
// gc reclaims the partial uploads and orphaned content the crash left.
func TestCrashMidUpload(t *testing.T) {
	dir, _, child, _, rb := startAliceChild(t)
	sizes := []int{4 << 10, 200 << 10, 1 << 20, 3 << 20}
	var mu sync.Mutex
	tried := map[string]attempt{}
	acked := map[string]attempt{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	writeUntil(16, stop, &wg, func(g, i int) bool {
		name := fmt.Sprintf("w%02d-%04d", g, i)
		a := attempt{seed: uint64(g<<16 | i), size: sizes[(g+i)%len(sizes)]}
		if i%5 == 4 { // some uploads duplicate content another writer stores
			a.seed = 1
		}
		mu.Lock()
		tried[name] = a
		mu.Unlock()
		if rb.Put(context.Background(), "up", name, bytes.NewReader(randBytes(a.seed, a.size)), int64(a.size)) != nil {
			return false // the server is gone
		}
		mu.Lock()
		acked[name] = a
		mu.Unlock()
		return true
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 100 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// One upload is held open half sent, so the kill lands mid-upload whatever the
	// machine's load: the server has its temp file when the kill comes.
	pr, pw := io.Pipe()
	held := make(chan error, 1)
	go func() { held <- rb.Put(context.Background(), "up", "held", pr, 2<<20) }()
	pw.Write(randBytes(99, 1<<20))
	testutil.WaitFor(t, 20*time.Second, "the held upload's temp file", func() bool {
		ents, _ := os.ReadDir(filepath.Join(dir, tmpName))
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && fi.Size() > 0 {
				return true
			}
		}
		return false
	})
	child.Kill() // SIGKILL, mid-upload
	pw.CloseWithError(errors.New("server killed"))
	<-held
	close(stop)
	wg.Wait()
	rb.Close()
	t.Logf("%d uploads acknowledged of %d tried before SIGKILL", len(acked), len(tried))
	if len(acked) == 0 {
		t.Fatal("no upload was acknowledged")
	}

	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ns, _ := s.Namespace("alice")
	for name, a := range acked {
		got, err := getBytes(t, ns, "up", name)
		if err != nil || !bytes.Equal(got, randBytes(a.seed, a.size)) {
			t.Fatalf("acknowledged %s: %v (intact: %v)", name, err, err == nil && bytes.Equal(got, randBytes(a.seed, a.size)))
		}
	}
	infos, err := ns.List(t.Context(), "up")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		a, ok := tried[in.Name]
		if !ok {
			t.Fatalf("%s is visible but nobody stored it", in.Name)
		}
		if _, ok := acked[in.Name]; !ok {
			got, err := getBytes(t, ns, "up", in.Name)
			if err != nil || !bytes.Equal(got, randBytes(a.seed, a.size)) {
				t.Fatalf("unacknowledged %s is visible and not whole: %v", in.Name, err)
			}
			t.Logf("%s: committed just before the kill, unacknowledged, whole", in.Name)
		}
	}
	rep := fsckClean(t, s)
	t.Logf("after the crash: %d stale uploads, %d orphaned blobs", rep.StaleUploads, rep.OrphanBlobs)
	if rep.StaleUploads+rep.OrphanBlobs == 0 {
		t.Fatal("the kill left no partial upload behind: the test did not crash mid-upload")
	}
	g, err := s.GC(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if g.StaleUploads != rep.StaleUploads || g.OrphanBlobs != rep.OrphanBlobs {
		t.Fatalf("gc reclaimed %+v, fsck saw %+v", g, rep)
	}
	if after := fsckClean(t, s); after.StaleUploads+after.OrphanBlobs != 0 {
		t.Fatalf("leftovers after gc: %+v", after)
	}
}

// TestGracefulSIGTERM checks that serve finishes cleanly on SIGTERM and exits 0.
func TestGracefulSIGTERM(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	cred, _ := AddUser(dir, "alice")
	child, url := startChild(t, dir)
	rb, _ := remote.New(url, cred)
	putBytes(t, rb, "", "f", []byte("kept"))
	rb.Close()
	child.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if code := child.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fsckClean(t, s)
}
