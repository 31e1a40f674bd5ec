package testutil

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireBinary returns the path of the named program from PATH or GOPATH/bin. If it is
// missing the test is skipped, or failed when VEIL_REQUIRE_INTEGRATION=1.
func RequireBinary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(string(bytes.TrimSpace(gp)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	Missing(t, name+" not installed (run scripts/install-deps)")
	return ""
}

// Missing ends a test that lacks a real component (a binary, a device): skipped, or failed
// when VEIL_REQUIRE_INTEGRATION=1, so an integration test never disappears silently.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("VEIL_REQUIRE_INTEGRATION") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// FreePort returns a port on 127.0.0.1, free for TCP and UDP a moment ago, for a server a
// test starts (often another process). It lies below the kernel's ephemeral range, which
// the kernel hands out to every outgoing connection and to listeners on port 0: a port
// from there (as this was) could be taken by any connection of the tests running alongside
// before the server bound it, and the server then failed to start. Nor is a port returned
// twice in one test binary.
func FreePort(t testing.TB) int {
	t.Helper()
	lo := ephemeralLow()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 1000 {
		port := freePortMin + rand.IntN(lo-freePortMin)
		if !freePorts.given[port] && bindable(port) {
			freePorts.given[port] = true
			return port
		}
	}
	t.Fatalf("no free port in %d-%d", freePortMin, lo-1)
	return 0
}

// freePortMin is the lowest port FreePort returns: above the well-known services' ports.
const freePortMin = 10000

// freePorts are the ports FreePort has returned in this process.
var freePorts = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default when it
// cannot be read, or when the range starts too low to leave room below it).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if lo, err := strconv.Atoi(f[0]); err == nil && lo > freePortMin+1000 {
			return lo
		}
	}
	return 32768
}

// bindable reports whether port on 127.0.0.1 can be bound for TCP and for UDP.
func bindable(port int) bool {
	l, err := net.Listen("tcp", Addr(port))
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", Addr(port))
	if err != nil {
		return false
	}
	u.Close()
	return true
}

// Addr returns "127.0.0.1:port".
func Addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// WaitTCP waits until addr accepts connections, failing the test after timeout.
func WaitTCP(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start listening within %s: %v", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Process is a child process started for a test; its output is kept for failure reports.
type Process struct {
	Cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (p *Process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output returns what the process printed so far (stdout and stderr).
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Start runs the command in the background and stops it (SIGKILL) when the test ends,
// logging its output if the test failed.
func Start(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	p := &Process{Cmd: exec.Command(name, args...), done: make(chan struct{})}
	p.Cmd.Stdout, p.Cmd.Stderr = p, p
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.Output())
		}
	})
	return p
}

// Kill stops the process with SIGKILL and waits for it.
func (p *Process) Kill() {
	if p.Cmd.Process != nil {
		p.Cmd.Process.Kill()
	}
	<-p.done
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// WaitFor polls cond every 10 ms until it holds, failing the test (naming what) after
// timeout: a deadline, not a guess at how long something takes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}
