package fusemount

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver/storetest"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/testutil"
)

// A read through the mount from a storage service that stopped answering (a stopped
// process: its kernel still takes connections and bytes) fails with EIO once
// Config.ReadTimeout has passed. Found by review: it waited on the service's answer for
// 5 minutes a try, three tries, and forever once the answer had begun.
func TestMountReadFromStalledServiceIsEIO(t *testing.T) {
	be, gate := stalledBackend(t)
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	data := make([]byte, 3<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	os.WriteFile(filepath.Join(src, "big"), data, 0o644)
	m := startMountWith(t, be, src, func(c *Config) { c.ReadTimeout = 2 * time.Second })
	f, err := os.Open(filepath.Join(m.dir, "current", "src", "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 4096)
	if _, err := f.ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	gate.Store(true)        // the service stops answering
	defer gate.Store(false) // before f.Close, which waits for a read still under way
	done := make(chan error, 1)
	go func() {
		_, err := f.ReadAt(make([]byte, 4096), int64(len(data))-10000) // a chunk not read yet
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("read from a stalled service: %v, want EIO", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read from a stalled service still waits after 30 s (ReadTimeout 2 s)")
	}
}

// stalledBackend is a client of stalledService, closed when the test ends.
func stalledBackend(t *testing.T) (*remote.Backend, *atomic.Bool) {
	t.Helper()
	url, cred, gate := stalledService(t)
	be, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be, gate
}

// stalledService runs a real storage service behind a relay that, while gate is true,
// holds every byte it gets (a service that stopped answering); it returns the relay's URL.
func stalledService(t *testing.T) (string, storewire.Credential, *atomic.Bool) {
	t.Helper()
	s, cred, _ := storetest.Open(t, storetest.Options{})
	addr := strings.TrimPrefix(storetest.Serve(t, s, nil), "https://")
	relay, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gate := &atomic.Bool{}
	var wg sync.WaitGroup
	t.Cleanup(func() { gate.Store(false); relay.Close(); wg.Wait() })
	go func() {
		for {
			c, err := relay.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); pass(up, c, gate) }()
			go func() { defer wg.Done(); pass(c, up, gate) }()
		}
	}()
	return "https://" + relay.Addr().String(), cred, gate
}

// pass copies src to dst, holding what it read while gate is true.
func pass(dst, src net.Conn, gate *atomic.Bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for gate.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A lookup the kernel interrupts (a signal reached the reader while the service was slow
// to answer) is retried by the reader, not failed: the mount answers EINTR, which Go's
// os.Open retries. Found by CI: Go's own preemption signal reaching a test blocked in
// open(2) made the kernel interrupt the lookup, and the mount answered EIO.
func TestMountInterruptedLookupIsRetried(t *testing.T) {
	be, gate := stalledBackend(t)
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	want := []byte("read after an interrupted lookup")
	os.WriteFile(filepath.Join(src, "sub", "file"), want, 0o644)
	m := startMountWith(t, be, src, func(*Config) {})
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGUSR1) // caught: the signal only interrupts the open
	defer signal.Stop(sigs)

	gate.Store(true) // the service stops answering: sub's lookup waits on it
	defer gate.Store(false)
	tid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the signal goes to the thread blocked in open(2)
		defer runtime.UnlockOSThread()
		tid <- syscall.Gettid()
		got, err := os.ReadFile(filepath.Join(m.dir, "current", "src", "sub", "file"))
		if err == nil && string(got) != string(want) {
			err = fmt.Errorf("read %q, want %q", got, want)
		}
		done <- err
	}()
	id := <-tid
	// The open waits on the stalled service (a fixed 500 ms sleep assumed it: under load
	// the signal could come first, and the test then passed without an interruption).
	testutil.WaitFor(t, 30*time.Second, "the reader blocked in open(2)", func() bool { return blockedIn(id, syscall.SYS_OPENAT) })
	if err := syscall.Tgkill(os.Getpid(), id, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the kernel has interrupted the lookup
	gate.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("read after an interrupted lookup: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the read still waits 60 s after the service answered again")
	}
}

// blockedIn reports whether thread tid of this process sleeps, interruptibly, in system
// call nr. (A read(2) of a mounted file waits on the page cache uninterruptibly, state D:
// signals do not interrupt reads, so no such test exists for Read.)
func blockedIn(tid int, nr uintptr) bool {
	sc, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
	if err != nil || !strings.HasPrefix(string(sc), fmt.Sprint(nr)+" ") {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	i := strings.LastIndexByte(string(st), ')') // the state follows the command's name
	return err == nil && i > 0 && strings.HasPrefix(string(st[i:]), ") S ")
}

// A listing of snapshots/ that waits for another listing (which reads the roots from a
// service slow to answer) ends when the kernel interrupts it: EINTR, which the reader
// retries. Found by review: it waited on a lock that ignored the interruption, for as long
// as the other listing took (up to Config.ReadTimeout, 90 s by default).
func TestMountInterruptedSnapshotsListingWaitIsEINTR(t *testing.T) {
	be, gate := stalledBackend(t)
	requireFUSE(t)
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	c := newClient(t, be)
	for i := range 2 { // the older snapshot's root is read when snapshots/ is first listed
		os.WriteFile(filepath.Join(src, "f"), []byte(fmt.Sprint("version ", i)), 0o644)
		putTree(t, c, src)
	}
	m := runMount(t, c, func(c *Config) { c.Refresh = time.Hour }) // no check for newer roots
	snaps := filepath.Join(m.dir, "snapshots")
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGUSR1) // caught: the signal only interrupts the listing
	defer signal.Stop(sigs)

	gate.Store(true) // the service stops answering: the first listing waits on it
	defer gate.Store(false)
	first := make(chan error, 1)
	firstTid := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		firstTid <- syscall.Gettid()
		es, err := os.ReadDir(snaps)
		if err == nil && len(es) != 2 {
			err = fmt.Errorf("%d snapshots, want 2", len(es))
		}
		first <- err
	}()
	id := <-firstTid
	testutil.WaitFor(t, 30*time.Second, "the first listing blocked", func() bool { return blockedIn(id, syscall.SYS_GETDENTS64) })

	second := make(chan error, 1)
	secondTid := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		fd, err := syscall.Open(snaps, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			secondTid <- 0
			second <- err
			return
		}
		defer syscall.Close(fd)
		secondTid <- syscall.Gettid()
		_, err = syscall.Getdents(fd, make([]byte, 8192)) // no retry on EINTR, unlike os.ReadDir
		second <- err
	}()
	id2 := <-secondTid
	if id2 == 0 {
		t.Fatal(<-second)
	}
	testutil.WaitFor(t, 30*time.Second, "the second listing blocked", func() bool { return blockedIn(id2, syscall.SYS_GETDENTS64) })
	if err := syscall.Tgkill(os.Getpid(), id2, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-second:
		if !errors.Is(err, syscall.EINTR) {
			t.Errorf("an interrupted listing waiting for another: %v, want EINTR", err)
		}
	case <-time.After(20 * time.Second):
		gate.Store(false)
		t.Fatalf("an interrupted listing still waits 20 s later, behind the stalled one: %v", <-second)
	}
	gate.Store(false)
	select {
	case err := <-first:
		if err != nil {
			t.Errorf("the first listing: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the first listing still waits 60 s after the service answered again")
	}
}

// A listing under current/ from a storage service that stopped answering is answered from
// the tree the mount has, within about a second, when a check for a newer root is due: the
// check goes on in the background. Found by review: the request that found the check due
// waited for it up to Config.ReadTimeout (90 s by default), once per --refresh, although
// nothing it answers needs the service.
func TestMountDueCheckOnStalledServiceAnswersAtOnce(t *testing.T) {
	be, gate := stalledBackend(t)
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "f"), []byte("f"), 0o644)
	m := startMountWith(t, be, src, func(c *Config) { c.ReadTimeout = 10 * time.Second; c.Refresh = time.Second })
	dir := filepath.Join(m.dir, "current", "src")
	if es, err := os.ReadDir(dir); err != nil || len(es) != 1 {
		t.Fatalf("current/src: %v %v", es, err)
	}
	gate.Store(true)                    // the service stops answering
	defer gate.Store(false)             // before the mount ends
	time.Sleep(1100 * time.Millisecond) // a check is due
	start := time.Now()
	es, err := os.ReadDir(dir)
	if took := time.Since(start); err != nil || len(es) != 1 || took > 5*time.Second {
		t.Fatalf("current/src with a check due and the service stalled: %v %v after %v, want its entry at once", es, err, took.Round(time.Millisecond))
	}
}
