package pkbbench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/local"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// Config says what to run. Zero values take the defaults.
type Config struct {
	Sizes    []int         // indexed pairs (default 10^3, 10^4, 10^5, 10^6)
	Queries  int           // searches per latency point (default 300)
	Clients  int           // concurrent clients for throughput (default 16)
	Duration time.Duration // per throughput run (default 5s)
	Dir      string        // scratch directory (default a temporary one, removed after)
	Only     []string      // experiments to run after publish (default all: fig9 fig10 fig11 pir throughput)
}

// Experiments are the names Config.Only takes.
var Experiments = []string{"fig9", "fig10", "fig11", "pir", "throughput"}

func (c *Config) want(x string) bool { return len(c.Only) == 0 || slices.Contains(c.Only, x) }

// Row is one measurement.
type Row struct {
	Experiment string  `json:"experiment"`
	What       string  `json:"what"`
	Pairs      int     `json:"pairs"`
	P50us      float64 `json:"p50_us,omitempty"`
	P90us      float64 `json:"p90_us,omitempty"`
	MeanUs     float64 `json:"mean_us,omitempty"`
	StdUs      float64 `json:"std_us,omitempty"`
	Ratio      float64 `json:"ratio_vs_plain,omitempty"`
	PerSec     float64 `json:"per_sec,omitempty"`
	Bytes      int64   `json:"bytes,omitempty"`
	Seconds    float64 `json:"seconds,omitempty"`
	Paper      string  `json:"paper,omitempty"`
}

type pair struct {
	id    wire.ID
	key   string
	value []byte
}

var words = []string{"report", "holiday", "invoice", "thesis", "backup", "photo", "song", "paper"}
var exts = []string{"pdf", "jpg", "txt", "mp3", "tar"}

func makePairs(n int) []pair {
	ps := make([]pair, n)
	for i := range ps {
		rand.Read(ps[i].id[:])
		ps[i].key = fmt.Sprintf("%s-%07d.%s", words[i%len(words)], i, exts[i%len(exts)])
		ps[i].value = fmt.Appendf(nil, "host-%03d:/srv/files/%07d", i%997, i)
	}
	return ps
}

// Run runs every experiment, calling emit per row.
func Run(ctx context.Context, cfg Config, emit func(Row)) error {
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = []int{1e3, 1e4, 1e5, 1e6}
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Queries, 300)
	def(&cfg.Clients, 16)
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	for _, x := range cfg.Only {
		if !slices.Contains(Experiments, x) {
			return fmt.Errorf("experiment %q: want one of %v", x, Experiments)
		}
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "veil-bench-peekaboo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	for _, n := range cfg.Sizes {
		if err := runSize(ctx, cfg, filepath.Join(dir, fmt.Sprint(n)), n, emit); err != nil {
			return fmt.Errorf("%d pairs: %w", n, err)
		}
		os.RemoveAll(filepath.Join(dir, fmt.Sprint(n)))
	}
	return nil
}

// env is one loaded deployment.
type env struct {
	d      *local.Deployment
	owner  *client.Client
	client *client.Client
	cred   []byte
	pairs  []pair
	plain  *plain
}

// noMix is a deployment with mixing off and a private-query table sized for n pairs.
func noMix(n int) local.Options {
	return local.Options{V: vserver.Config{BatchSize: 1}, PIR: pir.ParamsFor(n)}
}

func runSize(ctx context.Context, cfg Config, dir string, n int, emit func(Row)) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	e := &env{pairs: makePairs(n)}
	var err error
	if e.d, err = local.Start(filepath.Join(dir, "pkb"), noMix(n)); err != nil {
		return err
	}
	defer func() { e.d.Stop() }()
	if e.owner, e.cred, err = user(ctx, e.d, "owner"); err != nil {
		return err
	}
	if e.client, e.cred, err = user(ctx, e.d, "client"); err != nil {
		return err
	}
	defer e.owner.Close()
	defer e.client.Close()
	if err := e.publish(ctx, n, emit); err != nil {
		return err
	}
	if cfg.want("fig9") {
		if e.plain, err = startPlain(dir, e.pairs); err != nil {
			return err
		}
		defer e.plain.close()
		if err := e.fig9(ctx, cfg, n, emit); err != nil {
			return err
		}
	}
	if cfg.want("pir") {
		if err := e.pirBench(ctx, cfg, n, emit); err != nil {
			return err
		}
	}
	main := n == 1e5 || (n == slices.Max(cfg.Sizes) && !slices.Contains(cfg.Sizes, 1e5))
	if main && cfg.want("fig10") {
		if err := e.fig10(ctx, cfg, n, emit); err != nil {
			return err
		}
	}
	if (n == 1e3 || n == 1e5) && cfg.want("fig11") {
		if err := e.fig11(ctx, cfg, n, emit); err != nil {
			return err
		}
	}
	if main && cfg.want("throughput") {
		return e.throughput(ctx, cfg, dir, n, emit)
	}
	return nil
}

func user(ctx context.Context, d *local.Deployment, name string) (*client.Client, []byte, error) {
	cred, err := d.AddUser(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cred)
	if err != nil {
		return nil, nil, err
	}
	return c, cred, c.RegisterClientKey(ctx)
}

// publish bulk-publishes every pair through the protocol and reports time and bytes.
func (e *env) publish(ctx context.Context, n int, emit func(Row)) error {
	ps := make([]client.Pair, n)
	for i, p := range e.pairs {
		ps[i] = client.Pair{Key: p.key, Value: p.value}
	}
	start := time.Now()
	if _, err := e.owner.Publish(ctx, ps, 0, nil); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	emit(Row{Experiment: "publish", What: "bulk publish (one call)", Pairs: n, Seconds: secs, PerSec: float64(n) / secs})
	for _, s := range []struct{ what, path string }{
		{"K-server bytes (kserver.db)", filepath.Join(e.d.KDir, "kserver.db")},
		{"V-server bytes (vserver.db)", filepath.Join(e.d.VDir, "vserver.db")},
	} {
		st, err := os.Stat(s.path)
		if err != nil {
			return err
		}
		emit(Row{Experiment: "publish", What: s.what, Pairs: n, Bytes: st.Size()})
	}
	return nil
}
