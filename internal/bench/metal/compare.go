package metalbench

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/primitive"
)

// CompareConfig says what `veil bench metal --primitive` measures: real Metal and Primitive
// Metal (paper Section 5.2: the whole ORAM, file data included, inside 2PC) at the same
// points, both servers in this process over one loopback TCP link each (no HTTP, no TLS).
type CompareConfig struct {
	Points []Point // default 2^4 and 2^6 files of 1 KiB, 2^4 of 4 KiB
	Ops    int     // accesses per system per point, alternately write and read (default 2)
	Stash  int     // default 33
	// Bandwidth, if > 0, caps each direction of the link between the servers at this many
	// bytes per second (the paper measured ~290 MB/s between its servers).
	Bandwidth float64
}

// CompareRow is one system at one point, per access (both servers' work, Metal-AC
// included).
type CompareRow struct {
	Files   uint64  `json:"files"`
	Block   int     `json:"block_bytes"`
	System  string  `json:"system"` // "metal" or "primitive"
	N       int     `json:"n"`
	MeanMs  float64 `json:"mean_ms"`
	MinMs   float64 `json:"min_ms"`
	CPUMs   float64 `json:"cpu_ms"`                  // user+system CPU of both servers (this process)
	ANDs    uint64  `json:"and_gates"`               // garbled AND gates per access
	MB      float64 `json:"mb_between_servers"`      // bytes between the servers per access, 10^6
	Speedup float64 `json:"metal_speedup,omitempty"` // primitive's mean / Metal's (primitive rows)
	Paper   string  `json:"paper,omitempty"`         // Table 5 at the nearest point
	LinkMBs float64 `json:"link_mb_per_s,omitempty"` // the simulated link's bandwidth, if any
}

// paperTable5 is the paper's Table 5 at 2^12 files (the smallest it reports).
var paperTable5 = map[string]map[int]string{
	"metal":     {4096: "2^12 x 4 KB: 1.34 s, 25.7 MB, 1.43 M AND", 16384: "2^12 x 16 KB: 1.66 s, 32.0 MB, 1.43 M AND"},
	"primitive": {4096: "2^12 x 4 KB: 3.56 s, 430 MB, 13.5 M AND", 16384: "2^12 x 16 KB: 13.6 s, 1690 MB, 53.1 M AND"},
}

// RunCompare measures both systems at every point, Metal first, and calls emit per row.
func RunCompare(ctx context.Context, cfg CompareConfig, emit func(CompareRow)) error {
	if len(cfg.Points) == 0 {
		cfg.Points = []Point{{4, 1024}, {6, 1024}, {4, 4096}}
	}
	if cfg.Ops <= 0 {
		cfg.Ops = 2
	}
	if cfg.Stash <= 0 {
		cfg.Stash = 33
	}
	for _, pt := range cfg.Points {
		mp := metalParams(pt, cfg.Stash)
		pp := primitive.Params{D: pt.FilesLog2, Stash: cfg.Stash, BlockSize: pt.BlockSize, FilesPerAccount: 16}
		if err := mp.Check(); err != nil {
			return err
		}
		if err := pp.Check(); err != nil {
			return err
		}
		var metal CompareRow
		for _, name := range []string{"metal", "primitive"} {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := measure(name, mp, pp, cfg.Ops, cfg.Bandwidth)
			if err != nil {
				return fmt.Errorf("%s at %d files of %d bytes: %w", name, mp.Files(), pt.BlockSize, err)
			}
			if name == "metal" {
				metal = r
			} else if metal.MeanMs > 0 {
				r.Speedup = r.MeanMs / metal.MeanMs
			}
			emit(r)
		}
	}
	return nil
}

func measure(name string, mp access.Params, pp primitive.Params, ops int, rate float64) (CompareRow, error) {
	r := CompareRow{Files: mp.Files(), Block: mp.BlockSize, System: name, N: ops, Paper: paperTable5[name][mp.BlockSize], LinkMBs: rate / 1e6}
	l, err := newLink(rate)
	if err != nil {
		return r, err
	}
	defer l.close()
	var sys system
	if name == "metal" {
		sys, err = newMetal(l, mp)
	} else {
		sys, err = newPrimitive(l, pp)
	}
	if err != nil {
		return r, err
	}
	defer sys.close()
	capability, first, err := sys.createAccount()
	if err != nil {
		return r, err
	}
	data := make([]byte, mp.BlockSize)
	var times []time.Duration
	ands0, bytes0, cpu0 := l.g.Stats().ANDGates, l.bytes.Load(), cpu()
	for i := 0; i < ops; i++ {
		op, file := ac.Write, first+uint64(i/2)
		if i%2 == 1 {
			op = ac.Read
		} else if _, err := rand.Read(data); err != nil {
			return r, err
		}
		t0 := time.Now()
		got, err := sys.access(capability, file, op, data)
		times = append(times, time.Since(t0))
		if err != nil {
			return r, err
		}
		if op == ac.Read {
			if err := checkRead(got, data); err != nil {
				return r, err
			}
		}
	}
	r.CPUMs = ms(cpu()-cpu0) / float64(ops)
	r.ANDs = (l.g.Stats().ANDGates - ands0) / uint64(ops)
	r.MB = float64(l.bytes.Load()-bytes0) / float64(ops) / 1e6
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	r.MeanMs, r.MinMs = ms(sum)/float64(ops), ms(times[0])
	return r, nil
}

// cpu is this process's user + system CPU time so far: both servers' work (and the
// client's, which is small), less sensitive than wall time to the machine's other tenants.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
