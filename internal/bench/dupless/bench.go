package duplessbench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/allinone"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/profile"
	"github.com/veil-project/veil/internal/storage"
)

// Row is one measurement, printed as a JSON line or a table row.
type Row struct {
	Experiment string  `json:"experiment"` // "fig5", "fig6-7", "overhead"
	What       string  `json:"what"`
	Size       int64   `json:"size,omitempty"`
	Ms         float64 `json:"ms"`                 // median time (veil)
	PlainMs    float64 `json:"plain_ms,omitempty"` // median time of the plain operation
	Ratio      float64 `json:"ratio,omitempty"`    // Ms / PlainMs
	CPUMs      float64 `json:"cpu_ms,omitempty"`   // median CPU time of the process (client and servers), veil
	PlainCPUMs float64 `json:"plain_cpu_ms,omitempty"`
	BytesSent  int64   `json:"bytes_sent,omitempty"`
	Overhead   int64   `json:"overhead_bytes,omitempty"`
	Paper      string  `json:"paper,omitempty"` // the paper's figure for the same quantity
}

// Config says what to run.
type Config struct {
	Sizes   []int64       // file sizes for figs. 6-7 (default DefaultSizes)
	MinTime time.Duration // per size and operation: repeat until this long (default 1s)
	Reps    int           // and at least this many times (default 5)
	Dir     string        // scratch directory (default: a new temp dir, removed after)
	// RTT, if set, puts a link of this round-trip time between the client and both
	// servers (a proxy holding every byte RTT/2 each way; the plain put crosses it too).
	RTT time.Duration
}

// DefaultSizes are the paper's 1 KB .. 64 MB in powers of four.
var DefaultSizes = []int64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}

// DefaultConfig holds the values zero fields of a Config take (Dir: a temp dir).
func DefaultConfig() Config { return Config{Sizes: DefaultSizes, MinTime: time.Second, Reps: 5} }

// Run starts a deployment, runs every experiment and calls emit for each row.
func Run(ctx context.Context, cfg Config, emit func(Row)) error {
	def := DefaultConfig()
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = def.Sizes
	}
	if cfg.MinTime <= 0 {
		cfg.MinTime = def.MinTime
	}
	if cfg.Reps <= 0 {
		cfg.Reps = def.Reps
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "veil-bench-dupless")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	e, err := start(ctx, cfg.Dir, cfg.RTT)
	if err != nil {
		return err
	}
	defer e.stop()
	if err := e.fig5(ctx, cfg, emit); err != nil {
		return err
	}
	if err := e.fig67(ctx, cfg, emit); err != nil {
		return err
	}
	return e.overhead(ctx, emit)
}

// env is a running deployment with one user, seen through veil and through the raw API.
type env struct {
	scratch string
	client  *dupless.Client
	raw     storage.Backend // the same storage service and user, no encryption
	phases  map[string][]time.Duration
	mu      sync.Mutex
	stop    func()
}

func start(ctx context.Context, dir string, rtt time.Duration) (*env, error) {
	addrs := make([]string, 5) // all free ports: the defaults may be another deployment's
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addrs[i] = l.Addr().String()
		l.Close()
	}
	server := filepath.Join(dir, "server")
	if _, err := allinone.Init(server, allinone.Config{KSAddr: addrs[0], KSUDP: addrs[1], StoreAddr: addrs[2],
		PkbKAddr: addrs[3], PkbVAddr: addrs[4]}); err != nil {
		return nil, err
	}
	inv, err := allinone.AddUser(server, "bench")
	if err != nil {
		return nil, err
	}
	dupless.TestOnlyUseLowCostKDF() // the passphrase KDF is not what is measured
	prof, pass := filepath.Join(dir, "profile"), []byte("bench")
	dep, err := allinone.Start(ctx, server, allinone.Options{})
	if err != nil {
		return nil, err
	}
	cfg, err := profile.Init(ctx, prof, pass, profile.InitOptions{Invite: inv}) // checks the service answers
	if err != nil {
		dep.Stop()
		return nil, err
	}
	var ov profile.Overrides
	var proxies []*delayProxy
	stopAll := func() {
		for _, p := range proxies {
			p.close()
		}
		dep.Stop()
	}
	if rtt > 0 {
		for _, a := range []string{addrs[0], addrs[2]} {
			p, err := startDelayProxy(a, rtt/2)
			if err != nil {
				stopAll()
				return nil, err
			}
			proxies = append(proxies, p)
		}
		ov.KSURL = "https://" + proxies[0].addr()
		ov.Storage = strings.Replace(cfg.Storage, addrs[2], proxies[1].addr(), 1)
	}
	e := &env{scratch: filepath.Join(dir, "scratch"), phases: map[string][]time.Duration{}}
	os.MkdirAll(e.scratch, 0o700)
	ev := dupless.Events{Phase: func(p string, d time.Duration) {
		e.mu.Lock()
		e.phases[p] = append(e.phases[p], d)
		e.mu.Unlock()
	}}
	cl, done, err := profile.Open(ctx, prof, pass, profile.ClientOptions{Events: ev, Overrides: ov})
	if err == nil {
		e.raw, err = profile.OpenStorage(ctx, prof, ov)
	}
	if err != nil {
		stopAll()
		return nil, err
	}
	e.client = cl
	e.stop = func() { done(); stopAll() }
	return e, nil
}

// freshFile writes size random bytes (new content each call, so nothing dedups).
func (e *env) freshFile(name string, size int64) (string, error) {
	p := filepath.Join(e.scratch, name)
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = io.CopyN(f, rand.Reader, size)
	return p, err
}

// repeat runs f until it has run reps times and minTime has passed; it returns the median.
func repeat(reps int, minTime time.Duration, f func(i int) (time.Duration, error)) (time.Duration, error) {
	var ds []time.Duration
	start := time.Now()
	for i := 0; i < reps || time.Since(start) < minTime; i++ {
		d, err := f(i)
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
		if i >= 200 {
			break
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

// alternate runs f and g in turn (f(0), g(0), f(1), ...) as repeat runs one, and returns
// the medians of each: wall time, and the CPU time this process (client and servers) spent
// in the operation, which the machine's load does not stretch as it does wall time. Each
// run times its operation itself (timed), leaving out its set-up.
func alternate(reps int, minTime time.Duration, f, g func(i int) (op, error)) (fm, gm medians, err error) {
	var fs, gs, fc, gc []time.Duration
	start := time.Now()
	for i := 0; i < reps || time.Since(start) < 2*minTime; i++ {
		for _, run := range []struct {
			fn        func(int) (op, error)
			out, cpus *[]time.Duration
		}{{f, &fs, &fc}, {g, &gs, &gc}} {
			o, err := run.fn(i)
			if err != nil {
				return fm, gm, err
			}
			*run.out, *run.cpus = append(*run.out, o.wall), append(*run.cpus, o.cpu)
		}
		if i >= 200 {
			break
		}
	}
	return medians{median(fs), median(fc)}, medians{median(gs), median(gc)}, nil
}

// op is the wall and CPU time of one operation.
type op struct{ wall, cpu time.Duration }

// timed runs fn and measures it.
func timed(fn func() error) (op, error) {
	c, t := cpuTime(), time.Now()
	err := fn()
	return op{time.Since(t), cpuTime() - c}, err
}

// medians are the median wall and CPU time of one operation.
type medians struct{ wall, cpu time.Duration }

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// nameOverhead is what the storage service keeps as names for one n-byte file name: the
// record's encrypted name + ".key", and the chunk object's "hh/" + 64 hex digits.
func nameOverhead(n int) int64 {
	return int64(base64.RawURLEncoding.EncodedLen(n+16) + len(".key") + 3 + 64)
}
