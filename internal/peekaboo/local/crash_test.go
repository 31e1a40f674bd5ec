package local

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/testutil"
)

// TestMain lets the test binary serve a deployment in a child process, so the crash test
// can SIGKILL both real servers mid-publication.
func TestMain(m *testing.M) {
	if dir := os.Getenv("VEIL_PKB_TEST_SERVE"); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		d, err := Start(dir, Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		<-ctx.Done()
		stop()
		if err := d.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startChild(t *testing.T, dir, vaddr string) *testutil.Process {
	t.Setenv("VEIL_PKB_TEST_SERVE", dir)
	p := testutil.Start(t, os.Args[0], "-test.run=^$")
	os.Unsetenv("VEIL_PKB_TEST_SERVE")
	testutil.WaitTCP(t, vaddr, 20*time.Second)
	return p
}

// TestSIGKILLDuringBulkPublish kills both servers (SIGKILL) while an owner bulk-publishes,
// restarts them from the same directories and checks that every acknowledged pair is on
// both servers: its value and owner on the V-server (list), its key on the K-server, and
// searchable.
func TestSIGKILLDuringBulkPublish(t *testing.T) {
	dir := t.TempDir()
	kaddr, vaddr := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	if err := Init(dir, kaddr, vaddr); err != nil {
		t.Fatal(err)
	}
	child := startChild(t, dir, vaddr)
	admin, err := os.ReadFile(filepath.Join(dir, "vserver", vserver.FileAdminCred))
	if err != nil {
		t.Fatal(err)
	}
	cred, err := client.AddUser(context.Background(), admin, "gina")
	if err != nil {
		t.Fatal(err)
	}
	if cred, err = client.Join(cred); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cred)
	if err != nil {
		t.Fatal(err)
	}
	const total, chunk = 40000, 1000
	pairs := make([]client.Pair, total)
	for i := range pairs {
		pairs[i] = client.Pair{Key: fmt.Sprintf("crash-%06d", i), Value: []byte(fmt.Sprintf("value-%06d", i))}
	}
	var acked atomic.Int64
	done := make(chan error, 1)
	go func() {
		_, err := c.Publish(context.Background(), pairs, chunk, func(n int) { acked.Store(int64(n)) })
		done <- err
	}()
	for acked.Load() < 3*chunk {
		select {
		case err := <-done:
			t.Fatalf("publication ended before the kill: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	child.Kill()
	if err := <-done; err == nil {
		t.Fatal("publication finished although the servers were killed")
	}
	c.Close()
	n := int(acked.Load())
	t.Logf("%d of %d pairs acknowledged before SIGKILL", n, total)

	child = startChild(t, dir, vaddr)
	c, err = client.New(cred)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]client.Listed{}
	for _, p := range list {
		byKey[p.Key] = p
	}
	for i := 0; i < n; i++ {
		p, ok := byKey[pairs[i].Key]
		if !ok || string(p.Value) != string(pairs[i].Value) {
			t.Fatalf("acknowledged pair %d lost on the V-server", i)
		}
	}
	for _, i := range []int{0, n / 2, n - 1} {
		r, err := c.Search(context.Background(), pairs[i].Key, client.SearchOptions{})
		if err != nil || len(r.Found) != 1 || string(r.Found[0].Value) != string(pairs[i].Value) {
			t.Fatalf("acknowledged pair %d not found after restart: %v", i, err)
		}
	}
	// Private queries: the V-server's start-up table sync adopts the entries the K-server
	// committed for the chunk in flight, so the two tables agree again.
	testutil.WaitFor(t, 30*time.Second, "private queries after the restart", func() bool {
		for _, i := range []int{0, n / 2, n - 1} {
			r, err := c.PrivateSearch(context.Background(), pairs[i].Key, client.SearchOptions{})
			if err != nil || len(r.Found) != 1 || string(r.Found[0].Value) != string(pairs[i].Value) {
				return false
			}
		}
		return true
	})
	child.Kill()
	k, err := kserver.Open(filepath.Join(dir, "kserver"), kserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for i := 0; i < n; i++ {
		if !k.Has(byKey[pairs[i].Key].ID) {
			t.Fatalf("acknowledged pair %d lost on the K-server", i)
		}
	}
}

// TestSIGTERMDrainsAndKeepsState: SIGTERM stops both servers cleanly (exit 0, the state
// files closed), and a restart serves what was published.
func TestSIGTERMDrainsAndKeepsState(t *testing.T) {
	dir, vaddr, cred, child := publishedThenStopped(t, "hank")
	if code := child.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, child.Output())
	}
	startChild(t, dir, vaddr)
	c, _ := client.New(cred)
	defer c.Close()
	if r, err := c.Search(context.Background(), "kept", client.SearchOptions{}); err != nil || len(r.Found) != 1 {
		t.Fatalf("after restart: %v", err)
	}
}

// publishedThenStopped inits a deployment in a temp dir, starts it as a child process,
// publishes the pair kept=v as user, then stops it with SIGTERM (a clean stop, as for an
// upgrade) and waits for it: the directory, the V-server's address, user's credential
// and the stopped child.
func publishedThenStopped(t *testing.T, user string) (dir, vaddr string, cred []byte, child *testutil.Process) {
	t.Helper()
	dir = t.TempDir()
	kaddr, vaddr := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	if err := Init(dir, kaddr, vaddr); err != nil {
		t.Fatal(err)
	}
	child = startChild(t, dir, vaddr)
	admin, _ := os.ReadFile(filepath.Join(dir, "vserver", vserver.FileAdminCred))
	cred, err := client.AddUser(context.Background(), admin, user)
	if err == nil {
		cred, err = client.Join(cred)
	}
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(cred)
	if _, err := c.Publish(context.Background(), []client.Pair{{Key: "kept", Value: []byte("v")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	child.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-child.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of SIGTERM")
	}
	return dir, vaddr, cred, child
}

// TestSearchRightAfterKServerCrash: a K-server killed just after answering refuses, once
// restarted, stamps up to about a second past its last answer (it may have answered
// them); a client searching right after the restart still gets its answer (Search and
// PrivateSearch reseal a query refused as stale after a short wait).
func TestSearchRightAfterKServerCrash(t *testing.T) {
	dir := t.TempDir()
	kaddr, vaddr := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	if err := Init(dir, kaddr, vaddr); err != nil {
		t.Fatal(err)
	}
	child := startChild(t, dir, vaddr)
	admin, _ := os.ReadFile(filepath.Join(dir, "vserver", vserver.FileAdminCred))
	cred, err := client.AddUser(context.Background(), admin, "ivy")
	if err == nil {
		cred, err = client.Join(cred)
	}
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(cred)
	if _, err := c.Publish(context.Background(), []client.Pair{{Key: "kept", Value: []byte("v")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Search(context.Background(), "kept", client.SearchOptions{}); err != nil || len(r.Found) != 1 {
		t.Fatalf("before the crash: %v", err)
	}
	c.Close()
	child.Kill()
	startChild(t, dir, vaddr)
	c, _ = client.New(cred)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r, err := c.Search(ctx, "kept", client.SearchOptions{}); err != nil || len(r.Found) != 1 {
		t.Fatalf("search right after the restart: %v", err)
	}
	if r, err := c.PrivateSearch(ctx, "kept", client.SearchOptions{}); err != nil || len(r.Found) != 1 {
		t.Fatalf("private search right after the restart: %v", err)
	}
}

// TestSearchWhenVServerHangs: a V-server that stops answering (here SIGSTOPped: it
// accepts connections in the kernel but never replies) kept a client's search waiting
// forever. The client now gives up after client.ReplyTimeout and says so.
func TestSearchWhenVServerHangs(t *testing.T) {
	dir := t.TempDir()
	kaddr, vaddr := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	if err := Init(dir, kaddr, vaddr); err != nil {
		t.Fatal(err)
	}
	child := startChild(t, dir, vaddr)
	admin, _ := os.ReadFile(filepath.Join(dir, "vserver", vserver.FileAdminCred))
	cred, err := client.AddUser(context.Background(), admin, "hal")
	if err == nil {
		cred, err = client.Join(cred)
	}
	if err != nil {
		t.Fatal(err)
	}
	child.Cmd.Process.Signal(syscall.SIGSTOP)
	defer child.Cmd.Process.Signal(syscall.SIGCONT)
	old := client.ReplyTimeout
	client.ReplyTimeout = time.Second
	defer func() { client.ReplyTimeout = old }()
	c, _ := client.New(cred)
	defer c.Close()
	done := make(chan error, 1)
	go func() { _, err := c.Search(context.Background(), "kept", client.SearchOptions{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within 1s") {
			t.Fatalf("search of a hung V-server: %v; want it to say there was no answer", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a search of a hung V-server was still waiting after 20 s")
	}
}
