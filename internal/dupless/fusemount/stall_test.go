package fusemount

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver/storetest"
	"github.com/veil-project/veil/internal/storewire"
)

// A read through the mount from a storage service that stopped answering (a stopped
// process: its kernel still takes connections and bytes) fails with EIO once
// Config.ReadTimeout has passed. Found by review: it waited on the service's answer for
// 5 minutes a try, three tries, and forever once the answer had begun.
func TestMountReadFromStalledServiceIsEIO(t *testing.T) {
	url, cred, gate := stalledService(t)
	be, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
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
