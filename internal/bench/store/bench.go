package storebench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/server"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
)

// Options control a run.
type Options struct {
	JSON    bool
	Seconds float64 // per measurement
	Clients int     // concurrent clients for the small-object put rate
	Dir     string  // scratch directory (default: a temp dir)
	// Veil is the path of a veil binary: the store is then measured through a child
	// 'veil store serve' process. Empty: the same server code in this process.
	Veil string
}

// Result is one measurement (one JSON line).
type Result struct {
	Bench   string  `json:"bench"`
	Target  string  `json:"target"` // store, disk, s3
	Op      string  `json:"op"`     // put, get
	Size    int     `json:"size"`
	Clients int     `json:"clients"`
	Ops     int64   `json:"ops"`
	Seconds float64 `json:"seconds"`
	OpsPerS float64 `json:"ops_per_s"`
	MiBPerS float64 `json:"mib_per_s"`
}

// Ratio compares two results against a target.
type Ratio struct {
	Bench  string  `json:"bench"`
	Ratio  string  `json:"ratio"`
	Value  float64 `json:"value"`
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
	Note   string  `json:"note,omitempty"`
}

// target is something to put objects into and get them back from.
type target interface {
	name() string
	put(ctx context.Context, key string, data []byte) error
	get(ctx context.Context, key string) (int64, error)
	reset(ctx context.Context) error
}

// DefaultOptions holds the values zero fields of Options take.
func DefaultOptions() Options { return Options{Seconds: 2, Clients: 16} }

// Run performs the benchmark and prints the results to w.
func Run(ctx context.Context, o Options, w io.Writer) error {
	def := DefaultOptions()
	if o.Seconds <= 0 {
		o.Seconds = def.Seconds
	}
	if o.Clients <= 0 {
		o.Clients = def.Clients
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "veil-bench-store-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := startStore(ctx, filepath.Join(dir, "store"), o.Veil)
	if err != nil {
		return err
	}
	defer st.stop()
	targets := []target{st, &diskTarget{dir: filepath.Join(dir, "disk")}}
	s3t, note := startS3(ctx, filepath.Join(dir, "s3"))
	if s3t != nil {
		defer s3t.stop()
		targets = append(targets, s3t)
	}
	p := &printer{w: w, json: o.JSON}
	p.header()
	res := map[string]Result{}
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		data := make([]byte, size+8)
		fillRandom(data)
		for _, t := range targets {
			for _, op := range []string{"put", "get"} {
				r, err := measure(ctx, t, op, size, 1, data, o.Seconds)
				if err != nil {
					return fmt.Errorf("bench %s %s %d: %w", t.name(), op, size, err)
				}
				res[fmt.Sprintf("%s/%s/%d/1", t.name(), op, size)] = r
				p.result(r)
			}
			if err := t.reset(ctx); err != nil {
				return err
			}
		}
	}
	small := make([]byte, 4<<10+8)
	fillRandom(small)
	for _, t := range targets {
		r, err := measure(ctx, t, "put", 4<<10, o.Clients, small, o.Seconds)
		if err != nil {
			return fmt.Errorf("bench %s concurrent put: %w", t.name(), err)
		}
		res[fmt.Sprintf("%s/put/4096/%d", t.name(), o.Clients)] = r
		p.result(r)
		t.reset(ctx)
	}
	big := res["store/put/67108864/1"]
	if s3 := res["s3/put/67108864/1"]; s3.Ops > 0 {
		p.ratio(Ratio{Ratio: "store_put_64MiB/s3_put_64MiB", Value: big.MiBPerS / s3.MiBPerS, Target: 0.7})
		g := res["store/get/67108864/1"]
		s3g := res["s3/get/67108864/1"]
		p.ratio(Ratio{Ratio: "store_get_64MiB/s3_get_64MiB", Value: g.MiBPerS / s3g.MiBPerS})
	} else {
		p.ratio(Ratio{Ratio: "store_put_64MiB/s3_put_64MiB", Target: 0.7, Note: note})
	}
	if d := res["disk/put/67108864/1"]; d.Ops > 0 {
		p.ratio(Ratio{Ratio: "store_put_64MiB/disk_put_64MiB", Value: big.MiBPerS / d.MiBPerS})
	}
	c := res[fmt.Sprintf("store/put/4096/%d", o.Clients)]
	p.ratio(Ratio{Ratio: fmt.Sprintf("store_put_4KiB_ops_per_s_%d_clients", o.Clients), Value: c.OpsPerS, Target: 2000})
	return nil
}

func fillRandom(b []byte) {
	var seed [32]byte
	r := rand.NewChaCha8(seed)
	r.Read(b)
}

// measure runs op for about secs seconds with the given number of clients; every put
// stores distinct content (a counter in the first 8 bytes) so nothing deduplicates.
func measure(ctx context.Context, t target, op string, size, clients int, data []byte, secs float64) (Result, error) {
	if op == "get" { // make something to read: up to 8 objects
		for i := range 8 {
			if err := t.put(ctx, fmt.Sprintf("get-%d", i), payload(data, size, uint64(1<<62+i))); err != nil {
				return Result{}, err
			}
		}
	}
	var ops, counter atomic.Int64
	var firstErr error
	var mu sync.Mutex
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size+8)
			copy(buf, data)
			for n := 0; time.Now().Before(deadline) || n < 3 && clients == 1; n++ {
				i := counter.Add(1)
				var err error
				if op == "put" {
					err = t.put(ctx, fmt.Sprintf("c%d-%d", c, i), payload(buf, size, uint64(i)))
				} else {
					var got int64
					got, err = t.get(ctx, fmt.Sprintf("get-%d", i%8))
					if err == nil && got != int64(size) {
						err = fmt.Errorf("got %d bytes, want %d", got, size)
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if firstErr != nil {
		return Result{}, firstErr
	}
	n := ops.Load()
	return Result{Bench: "store", Target: t.name(), Op: op, Size: size, Clients: clients, Ops: n, Seconds: el,
		OpsPerS: float64(n) / el, MiBPerS: float64(n) * float64(size) / el / (1 << 20)}, nil
}

// payload stamps i into buf's first 8 bytes and returns size bytes.
func payload(buf []byte, size int, i uint64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], i)
	copy(buf, b[:min(8, size)])
	return buf[:size]
}

// storeTarget is the store's HTTPS API on loopback.
type storeTarget struct {
	b    *remote.Backend
	done chan error
	stop func()
}

func startStore(ctx context.Context, dir, veil string) (*storeTarget, error) {
	if err := storeserver.Init(dir); err != nil {
		return nil, err
	}
	cred, err := storeserver.AddUser(dir, "bench")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &storeTarget{done: make(chan error, 1)}
	if veil != "" {
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.CommandContext(ctx, veil, "store", "serve", "--dir", dir, "--listen", addr,
			"--max-object-size", "1GiB", "--log-level", "error")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if err := waitTCP(addr); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("veil store serve: %w", err)
		}
		t.stop = func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait(); t.b.Close() }
		t.b, err = remote.New("https://"+addr, cred)
		return t, err
	}
	svc, err := storeserver.Open(dir, storeserver.Config{MaxObjectSize: 1 << 30})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	go func() { t.done <- svc.Serve(sctx, server.Listeners{HTTP: ln}) }()
	t.stop = func() { cancel(); <-t.done; t.b.Close(); svc.Close() }
	t.b, err = remote.New("https://"+ln.Addr().String(), cred)
	return t, err
}

func waitTCP(addr string) error {
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if i > 150 {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (t *storeTarget) name() string { return "store" }
func (t *storeTarget) put(ctx context.Context, key string, data []byte) error {
	return t.b.Put(ctx, "bench", key, bytes.NewReader(data), int64(len(data)))
}
func (t *storeTarget) get(ctx context.Context, key string) (int64, error) {
	rc, err := t.b.Get(ctx, "bench", key)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return io.Copy(io.Discard, rc)
}
func (t *storeTarget) reset(ctx context.Context) error {
	infos, err := t.b.List(ctx, "bench")
	if err != nil {
		return err
	}
	for _, i := range infos {
		if err := t.b.Delete(ctx, "bench", i.Name); err != nil {
			return err
		}
	}
	return nil // the content stays as garbage until a gc; it does not slow puts
}

// diskTarget writes each object to its own file and fsyncs it: a plain copy to the disk.
type diskTarget struct{ dir string }

func (d *diskTarget) name() string { return "disk" }
func (d *diskTarget) put(_ context.Context, key string, data []byte) error {
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(d.dir, key))
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
func (d *diskTarget) get(_ context.Context, key string) (int64, error) {
	f, err := os.Open(filepath.Join(d.dir, key))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(io.Discard, f)
}
func (d *diskTarget) reset(context.Context) error { return os.RemoveAll(d.dir) }

type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) header() {
	if !p.json {
		fmt.Fprintf(p.w, "%-6s %-4s %9s %7s %8s %10s %10s\n", "TARGET", "OP", "SIZE", "CLIENTS", "OPS", "OPS/S", "MiB/S")
	}
}

func (p *printer) result(r Result) {
	if p.json {
		json.NewEncoder(p.w).Encode(r)
		return
	}
	fmt.Fprintf(p.w, "%-6s %-4s %9d %7d %8d %10.1f %10.1f\n", r.Target, r.Op, r.Size, r.Clients, r.Ops, r.OpsPerS, r.MiBPerS)
}

func (p *printer) ratio(r Ratio) {
	r.Bench = "store"
	r.Met = r.Target == 0 || r.Value >= r.Target
	if p.json {
		json.NewEncoder(p.w).Encode(r)
		return
	}
	tgt := ""
	if r.Target > 0 {
		tgt = fmt.Sprintf(" (target >= %g: %v)", r.Target, r.Met)
	}
	if r.Note != "" {
		tgt += " " + r.Note
	}
	fmt.Fprintf(p.w, "%s = %.2f%s\n", r.Ratio, r.Value, tgt)
}
