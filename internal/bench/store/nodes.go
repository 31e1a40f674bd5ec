package storebench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
)

// NodesOptions control 'veil bench store-nodes'.
type NodesOptions struct {
	Veil    string  // the veil binary the nodes run as ('veil store serve' children)
	Seconds float64 // per measurement
	Clients int     // concurrent clients
	Rounds  int     // alternations of the two set-ups
	JSON    bool
}

// DefaultNodesOptions holds the values zero fields of NodesOptions take.
func DefaultNodesOptions() NodesOptions { return NodesOptions{Seconds: 5, Clients: 32, Rounds: 2} }

// NodesResult is one measurement of a set-up: 4 KiB puts/s and CPU per put in each process.
type NodesResult struct {
	Bench      string  `json:"bench"`
	Setup      string  `json:"setup"` // "1 bbolt node" or "2 nodes + postgres"
	Round      int     `json:"round"`
	Clients    int     `json:"clients"`
	Ops        int64   `json:"ops"`
	Seconds    float64 `json:"seconds"`
	OpsPerS    float64 `json:"ops_per_s"`
	NodeCPUus  float64 `json:"node_cpu_us_per_put"`     // all store nodes together
	PGCPUus    float64 `json:"postgres_cpu_us_per_put"` // postmaster and its backends
	LoadBefore string  `json:"loadavg_before"`
}

// RunNodes measures, in one run, 4 KiB puts/s with Clients concurrent clients against one
// bbolt store node and against two store nodes sharing one PostgreSQL (clients alternate
// between the nodes), alternating the two set-ups Rounds times, with the CPU each process
// spent per put (from /proc). The PostgreSQL server is started for the run (initdb in a
// temp dir, fsync on). 4 KiB content is kept inline in the metadata, so the blob store
// (local here) is not touched.
func RunNodes(ctx context.Context, o NodesOptions, w io.Writer) error {
	d := DefaultNodesOptions()
	if o.Seconds <= 0 {
		o.Seconds = d.Seconds
	}
	if o.Clients <= 0 {
		o.Clients = d.Clients
	}
	if o.Rounds <= 0 {
		o.Rounds = d.Rounds
	}
	dir, err := os.MkdirTemp("", "veil-bench-nodes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pg, err := startPG(ctx, dir)
	if err != nil {
		return err
	}
	defer pg.stop()
	single, err := startNodes(ctx, o.Veil, filepath.Join(dir, "bolt"), "", 1)
	if err != nil {
		return err
	}
	defer single.stop()
	multi, err := startNodes(ctx, o.Veil, filepath.Join(dir, "pg"), pg.url, 2)
	if err != nil {
		return err
	}
	defer multi.stop()
	var sum [2]float64
	for round := 1; round <= o.Rounds; round++ {
		for i, s := range []*nodeSet{single, multi} {
			r, err := s.measure(ctx, o, pg)
			if err != nil {
				return fmt.Errorf("%s: %w", s.setup, err)
			}
			r.Round = round
			sum[i] += r.OpsPerS
			printNodes(w, o.JSON, r)
		}
	}
	ratio := sum[1] / sum[0]
	if o.JSON {
		return json.NewEncoder(w).Encode(Ratio{Bench: "store-nodes", Ratio: "two_pg_nodes/one_bbolt_node_4KiB_puts_per_s", Value: ratio, Target: 0.8, Met: ratio >= 0.8})
	}
	_, err = fmt.Fprintf(w, "two_pg_nodes/one_bbolt_node_4KiB_puts_per_s = %.2f (target >= 0.8: %v)\n", ratio, ratio >= 0.8)
	return err
}

func printNodes(w io.Writer, js bool, r NodesResult) {
	r.Bench = "store-nodes"
	if js {
		json.NewEncoder(w).Encode(r)
		return
	}
	fmt.Fprintf(w, "round %d  %-20s clients %d  %8.1f puts/s  node CPU %6.0f us/put  postgres CPU %6.0f us/put  (loadavg %s)\n",
		r.Round, r.Setup, r.Clients, r.OpsPerS, r.NodeCPUus, r.PGCPUus, r.LoadBefore)
}

// nodeSet is one or more 'veil store serve' children sharing a store.
type nodeSet struct {
	setup   string
	cmds    []*exec.Cmd
	clients []*remote.Backend
	counter atomic.Int64
}

func startNodes(ctx context.Context, veil, dir, db string, n int) (*nodeSet, error) {
	first := filepath.Join(dir, "node1")
	if err := storeserver.InitDB(first, db, storeserver.LocalBlobs, nil); err != nil {
		return nil, err
	}
	cred, err := storeserver.AddUser(first, "bench")
	if err != nil {
		return nil, err
	}
	s := &nodeSet{setup: "1 bbolt node"}
	if db != "" {
		s.setup = fmt.Sprintf("%d nodes + postgres", n)
	}
	for i := range n {
		nd := first
		if i > 0 { // a further node serves a copy of the first one's data directory
			nd = filepath.Join(dir, fmt.Sprintf("node%d", i+1))
			if err := os.CopyFS(nd, os.DirFS(first)); err != nil {
				s.stop()
				return nil, err
			}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.stop()
			return nil, err
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.CommandContext(ctx, veil, "store", "serve", "--dir", nd, "--listen", addr, "--log-level", "error")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			s.stop()
			return nil, err
		}
		s.cmds = append(s.cmds, cmd)
		if err := waitTCP(addr); err != nil {
			s.stop()
			return nil, fmt.Errorf("veil store serve: %w", err)
		}
		b, err := remote.New("https://"+addr, cred)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.clients = append(s.clients, b)
	}
	return s, nil
}

func (s *nodeSet) stop() {
	for _, c := range s.cmds {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	}
	for _, b := range s.clients {
		b.Close()
	}
}

func (s *nodeSet) measure(ctx context.Context, o NodesOptions, pg *pgProc) (NodesResult, error) {
	r := NodesResult{Setup: s.setup, Clients: o.Clients, LoadBefore: loadavg()}
	node0, pg0 := s.cpu(), pg.cpu()
	var ops atomic.Int64
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	deadline := start.Add(time.Duration(o.Seconds * float64(time.Second)))
	var wg sync.WaitGroup
	for c := range o.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := s.clients[c%len(s.clients)]
			buf := make([]byte, 4<<10)
			fillRandom(buf)
			for time.Now().Before(deadline) {
				i := s.counter.Add(1)
				copy(buf, fmt.Sprintf("%s-%d", s.setup, i)) // distinct content: nothing deduplicates
				err := b.Put(ctx, "bench", fmt.Sprintf("c%d-%d", c, i), bytes.NewReader(buf), int64(len(buf)))
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return r, firstErr
	}
	r.Seconds = time.Since(start).Seconds()
	r.Ops = ops.Load()
	r.OpsPerS = float64(r.Ops) / r.Seconds
	if r.Ops > 0 {
		r.NodeCPUus = (s.cpu() - node0).Seconds() * 1e6 / float64(r.Ops)
		if len(s.cmds) > 1 {
			r.PGCPUus = (pg.cpu() - pg0).Seconds() * 1e6 / float64(r.Ops)
		}
	}
	return r, nil
}

func (s *nodeSet) cpu() time.Duration {
	var t time.Duration
	for _, c := range s.cmds {
		t += procCPU(c.Process.Pid)
	}
	return t
}

// procCPU is the user+system CPU time of a process so far (/proc/PID/stat, fields 14-15,
// in clock ticks of 1/100 s, the value on Linux).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// ppid is a process's parent (/proc/PID/stat field 4).
func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var p int
	if len(f) > 1 {
		fmt.Sscan(f[1], &p)
	}
	return p
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
