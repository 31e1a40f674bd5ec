package metalbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/client"
	mserver "github.com/veil-project/veil/internal/metal/server"
	"github.com/veil-project/veil/internal/server"
)

// Point is one deployment size.
type Point struct {
	FilesLog2 int
	BlockSize int
}

// Config says what to measure.
type Config struct {
	Points []Point       // default 2^6 and 2^10 files of 1 KiB, 2^10 of 4 KiB
	Ops    int           // reads and writes each per point (default 3)
	Stash  int           // default 33
	RTT    time.Duration // added inter-server round-trip time (the paper: 19 ms)
}

// Row is one measurement.
type Row struct {
	RTTms    float64 `json:"rtt_ms"`
	Files    uint64  `json:"files"`
	Block    int     `json:"block_bytes"`
	Op       string  `json:"op"`
	N        int     `json:"n"`
	MeanMs   float64 `json:"mean_ms"`
	MinMs    float64 `json:"min_ms"`
	CPUMs    float64 `json:"cpu_ms,omitempty"`       // CPU (user+sys) of this process per call: both servers and the client
	Front    float64 `json:"front_ms,omitempty"`     // Metal-AC + position map (2PC)
	Index    float64 `json:"indexoram_ms,omitempty"` // IndexORAM read + evictions (2PC)
	Split    float64 `json:"split_ms,omitempty"`     // DOT index + the composed permutation, split (2PC)
	Fetch    float64 `json:"fetch_ms,omitempty"`     // SS-DOT + threshold decryption
	Permute  float64 `json:"permute_ms,omitempty"`   // Sections 5.5-5.6: the one permutation
	Commit   float64 `json:"commit_ms,omitempty"`    // bbolt
	Paper    string  `json:"paper,omitempty"`
	Comments string  `json:"comments,omitempty"`
}

// metalParams is Metal's parameters at pt: 16 files per account, the default packing and base.
func metalParams(pt Point, stash int) access.Params {
	return access.Params{D: pt.FilesLog2, Stash: stash, BlockSize: pt.BlockSize, FilesPerAccount: 16,
		Pack: access.DefaultParams.Pack, Base: access.DefaultParams.Base}
}

// Run measures every point and calls emit per row.
func Run(ctx context.Context, cfg Config, emit func(Row)) error {
	if len(cfg.Points) == 0 {
		cfg.Points = []Point{{6, 1024}, {10, 1024}, {10, 4096}}
	}
	if cfg.Ops <= 0 {
		cfg.Ops = 3
	}
	if cfg.Stash <= 0 {
		cfg.Stash = 33
	}
	for _, pt := range cfg.Points {
		p := metalParams(pt, cfg.Stash)
		if err := p.Check(); err != nil {
			return err
		}
		if err := runPoint(ctx, p, cfg, emit); err != nil {
			return fmt.Errorf("%d files of %d bytes: %w", p.Files(), p.BlockSize, err)
		}
	}
	return nil
}

func runPoint(ctx context.Context, p access.Params, cfg Config, emit func(Row)) error {
	ops := cfg.Ops
	d, err := start(ctx, p, cfg.RTT/2)
	if err != nil {
		return err
	}
	defer d.stop()
	var c *client.Client
	// The servers meet once each has loaded its state and built its circuits: minutes at
	// 2^20 files on a loaded machine.
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if c, err = client.New(ctx, d.dep); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return err
		}
	}
	var acct client.Account
	var times []time.Duration
	for i := 0; i < ops; i++ {
		t0 := time.Now()
		if acct, err = c.CreateAccount(ctx); err != nil {
			return err
		}
		times = append(times, time.Since(t0))
	}
	emit(row(p, cfg.RTT, "create_account", times, nil, "0.42 s (2^20 x 64 KiB, 19 ms RTT)"))
	data := make([]byte, p.BlockSize)
	for _, op := range []string{"write", "read"} {
		times = times[:0]
		var tims []access.Timings
		cpu0 := cpuTime()
		for i := 0; i < ops; i++ {
			t0 := time.Now()
			if op == "write" {
				err = c.Write(ctx, acct.Capability, acct.First+uint64(i)%uint64(acct.Count), data)
			} else {
				_, err = c.Read(ctx, acct.Capability, acct.First+uint64(i)%uint64(acct.Count))
			}
			if err != nil {
				return err
			}
			times = append(times, time.Since(t0))
			tims = append(tims, d.s1.LastTimings())
		}
		r := row(p, cfg.RTT, op, times, tims, "3.62 s (2^20 x 64 KiB, two 8-vCPU servers, 19 ms RTT)")
		r.CPUMs = ms(cpuTime()-cpu0) / float64(ops)
		emit(r)
	}
	return nil
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func row(p access.Params, rtt time.Duration, op string, times []time.Duration, tims []access.Timings, paper string) Row {
	r := Row{RTTms: ms(rtt), Files: p.Files(), Block: p.BlockSize, Op: op, N: len(times), Paper: paper}
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	sorted := append([]time.Duration{}, times...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	r.MeanMs, r.MinMs = ms(sum)/float64(len(times)), ms(sorted[0])
	n := float64(len(tims))
	for _, t := range tims {
		r.Front += ms(t.Front) / n
		r.Index += ms(t.IndexORAM) / n
		r.Split += ms(t.Mid) / n
		r.Fetch += ms(t.Fetch) / n
		r.Permute += ms(t.Permute) / n
		r.Commit += ms(t.Commit) / n
	}
	return r
}

// deployment is two in-process servers on loopback.
type deployment struct {
	dep    access.Deployment
	s1     *mserver.Server
	cancel context.CancelFunc
	done   chan error
	dir    string
}

func start(ctx context.Context, p access.Params, delay time.Duration) (*deployment, error) {
	dir, err := os.MkdirTemp("", "veil-bench-metal")
	if err != nil {
		return nil, err
	}
	d := &deployment{dir: dir, done: make(chan error, 2)}
	var ls [2]server.Listeners
	for i := range ls {
		if ls[i], err = server.Listen("127.0.0.1:0", ""); err != nil {
			return nil, err
		}
	}
	dirs := [2]string{filepath.Join(dir, "1"), filepath.Join(dir, "2")}
	if err := mserver.Init(dirs[1], mserver.InitOptions{Role: 2, Endpoint: "https://" + ls[1].Addr(), Params: p}); err != nil {
		return nil, err
	}
	cred, err := os.ReadFile(filepath.Join(dirs[1], mserver.FilePeerCred))
	if err != nil {
		return nil, err
	}
	if err := mserver.Init(dirs[0], mserver.InitOptions{Role: 1, Endpoint: "https://" + ls[0].Addr(), PeerCred: cred}); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dirs[0], mserver.FileDeployment))
	if err != nil {
		return nil, err
	}
	if d.dep, err = access.ParseDeployment(b); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	for i := range dirs {
		s, err := mserver.Open(dirs[i], mserver.Config{LinkDelay: delay})
		if err != nil {
			cancel()
			return nil, err
		}
		if i == 0 {
			d.s1 = s
		}
		go func() { err := s.Serve(sctx, ls[i]); s.Close(); d.done <- err }()
	}
	return d, nil
}

func (d *deployment) stop() {
	d.cancel()
	<-d.done
	<-d.done
	os.RemoveAll(d.dir)
}
