package osbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/oblivisync"
)

// Config scales the experiments; the paper's values are N=1024, B=1 MB, k=3,6,9,12.
type Config struct {
	Files     int     // N
	FileSize  int     // B
	Ks        []int   // drip rates to compare
	Fill      float64 // Fig. 4: fraction of N to insert (paper: 920/1024)
	Runs      int     // runs averaged (paper: 3)
	MaxEpochs int     // safety cap per run
	Dir       string  // scratch directory (default: os.TempDir())
	Seed      uint64  // workload generator seed (file sizes, thrash choices)
	// Thrash is Fig. 7's mean bytes rewritten per epoch, as a fraction of B (paper: 1 MB
	// per write batch with B = 1 MB, i.e. 1).
	Thrash float64
	// ThrashMaxFile, if > 0, rewrites only files of at most this many bytes in Fig. 7
	// (the paper's "about 1 MB per write" read as no single rewrite above it).
	ThrashMaxFile int
}

// Row is one result line.
type Row map[string]any

var pass = []byte("osync benchmark passphrase")

// cheapKDF: benchmarks measure the sync path, not the passphrase hash.
var cheapKDF = oblivisync.KDF{Time: 1, MemoryKiB: 64, Threads: 1}

// env is one backend + writer in a scratch directory.
type env struct {
	dir string
	w   *oblivisync.Writer
	C   int
}

func newEnv(c Config, k int) (*env, error) {
	dir, err := os.MkdirTemp(c.Dir, "osbench-")
	if err != nil {
		return nil, err
	}
	p := oblivisync.Params{Files: c.Files, FileSize: c.FileSize, K: k, DripTime: time.Second}
	if err := oblivisync.Init(filepath.Join(dir, "be"), pass, p, cheapKDF); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	w, err := oblivisync.OpenWriter(filepath.Join(dir, "be"), pass, oblivisync.Options{StateDir: filepath.Join(dir, "state"), UnsafeNoFsync: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &env{dir: dir, w: w, C: w.FragmentSize()}, nil
}

func (e *env) close() {
	e.w.Close()
	os.RemoveAll(e.dir)
}

// put creates a file of n bytes (random content) in the root.
func (e *env) put(name string, n int, rng *rand.Rand) (uint64, error) {
	a, err := e.w.Create(1, name, 0o644, 0, 0)
	if err != nil {
		return 0, err
	}
	return a.Ino, e.fill(a.Ino, n, rng)
}

func (e *env) fill(ino uint64, n int, rng *rand.Rand) error {
	buf := make([]byte, min(n, 1<<20))
	for off := 0; off < n; off += len(buf) {
		chunk := buf[:min(len(buf), n-off)]
		for i := 0; i+8 <= len(chunk); i += 8 {
			v := rng.Uint64()
			for j := 0; j < 8; j++ {
				chunk[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := e.w.Write(ino, int64(off), chunk); err != nil {
			return err
		}
	}
	return nil
}

// cpu returns the process's user+system CPU time.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lognormal draws a file size from a lognormal fitted to measured file systems (median
// ~12 KB, heavy tail; Douceur-Bolosky / Agrawal et al. as the paper uses), capped.
func lognormal(rng *rand.Rand, capBytes int) int {
	const mu, sigma = 9.4, 1.8
	v := math.Exp(mu + sigma*rng.NormFloat64())
	return max(1, min(int(v), capBytes))
}

func (c *Config) defaults() {
	if c.Runs <= 0 {
		c.Runs = 1
	}
	if c.MaxEpochs <= 0 {
		c.MaxEpochs = 200000
	}
	if c.Fill <= 0 {
		c.Fill = 920.0 / 1024
	}
	if c.Thrash <= 0 {
		c.Thrash = 1
	}
	if len(c.Ks) == 0 {
		c.Ks = []int{3, 6, 9, 12}
	}
}

func errCap(what string, epochs int) error {
	return fmt.Errorf("%s did not finish within %d epochs", what, epochs)
}

// Experiments lists the names Run accepts.
var Experiments = []string{"throughput", "variable", "latency", "buffer", "fuse-write"}

// Run runs the named experiments (all when names is empty) in order.
func Run(c Config, names []string, bufferEpochs int, fuseBytes int64, emit func(Row)) error {
	if len(names) == 0 {
		names = Experiments
	}
	for _, name := range names {
		var err error
		switch name {
		case "throughput":
			err = Throughput(c, emit)
		case "variable":
			err = Variable(c, emit)
		case "latency":
			err = Latency(c, emit)
		case "buffer":
			err = Buffer(c, bufferEpochs, emit)
		case "fuse-write":
			err = FuseWrite(c, fuseBytes, []int{128 << 10, 1 << 20}, emit)
		default:
			err = fmt.Errorf("unknown experiment %q (have %v)", name, Experiments)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
