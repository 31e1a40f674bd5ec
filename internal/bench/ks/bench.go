package ksbench

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/oprf"
)

// Options configures one run.
type Options struct {
	Credential  []byte        // credential file contents
	URL         string        // HTTPS URL override
	UDPAddr     string        // UDP address override
	Transport   string        // https (default) or udp
	Batch       int           // blinded inputs per request (default 1)
	Concurrency int           // closed-loop workers (default 4)
	Duration    time.Duration // measuring time (default 10s)
	Rate        int           // udp only: open-loop requests per second (0: closed loop)
	Static      bool          // https only: GET /healthz instead of evaluating
	Verify      bool          // verify and unblind every answer (client CPU included)
	HTTP2       bool          // one multiplexed HTTP/2 connection instead of keep-alive HTTP/1.1
	Timeout     time.Duration // per request (default 1s); a UDP request unanswered by then is a drop
}

// Result is one run's figures.
type Result struct {
	Transport   string  `json:"transport"`
	Static      bool    `json:"static"`
	Verify      bool    `json:"verify"`
	Batch       int     `json:"batch"`
	Concurrency int     `json:"concurrency"`
	Rate        int     `json:"rate,omitempty"`
	Seconds     float64 `json:"seconds"`
	Sent        int64   `json:"sent"`
	Requests    int64   `json:"requests"`
	Evaluations int64   `json:"evaluations"`
	ReqPerSec   float64 `json:"requests_per_s"`
	EvalPerSec  float64 `json:"evaluations_per_s"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	Errors      int64   `json:"errors"`
	Drops       int64   `json:"drops"`
	DropPct     float64 `json:"drop_pct"`
}

// prepared is one pre-computed request with what verifying its answer needs.
type prepared struct {
	body []byte
	bl   *oprf.Blinded
}

type runner struct {
	o    Options
	cred *kswire.Parsed
	reqs []prepared
	tls  *tls.Config
	mu   sync.Mutex
	lat  []time.Duration
	res  Result
	span time.Duration // open-loop runs: the sending time, without the wait for stragglers
}

// DefaultOptions holds the values zero fields of Options take.
func DefaultOptions() Options {
	return Options{Transport: "https", Batch: 1, Concurrency: 4, Duration: 10 * time.Second, Timeout: time.Second}
}

// Run executes one benchmark run until opts.Duration has passed or ctx ends.
func Run(ctx context.Context, opts Options) (*Result, error) {
	def := DefaultOptions()
	if opts.Transport == "" {
		opts.Transport = def.Transport
	}
	opts.Batch = max(opts.Batch, def.Batch)
	if opts.Concurrency <= 0 {
		opts.Concurrency = def.Concurrency
	}
	if opts.Duration <= 0 {
		opts.Duration = def.Duration
	}
	if opts.Timeout <= 0 {
		opts.Timeout = def.Timeout
	}
	if opts.Batch > kswire.MaxBatch {
		return nil, fmt.Errorf("batch %d exceeds %d", opts.Batch, kswire.MaxBatch)
	}
	cred, err := kswire.ParseCredential(opts.Credential)
	if err != nil {
		return nil, err
	}
	if opts.URL == "" {
		opts.URL = cred.URL
	}
	if !strings.Contains(opts.URL, "://") { // host:port
		opts.URL = "https://" + opts.URL
	}
	if opts.UDPAddr == "" {
		opts.UDPAddr = cred.UDP
	}
	u, err := url.Parse(opts.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("url %q: want https://host:port", opts.URL)
	}
	host, _, _ := net.SplitHostPort(u.Host)
	r := &runner{o: opts, cred: cred, tls: &tls.Config{Certificates: []tls.Certificate{cred.Cert},
		RootCAs: cred.CAs, ServerName: host, MinVersion: tls.VersionTLS13}}
	r.res = Result{Transport: opts.Transport, Static: opts.Static, Verify: opts.Verify, Batch: opts.Batch,
		Concurrency: opts.Concurrency, Rate: opts.Rate}
	if err := r.prepare(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	start := time.Now()
	switch {
	case opts.Transport == "https":
		err = r.runHTTPS(ctx)
	case opts.Transport == "udp" && opts.Static:
		return nil, errors.New("--static measures /healthz over https only")
	case opts.Transport == "udp" && opts.Rate > 0:
		err = r.runUDPRate(ctx)
	case opts.Transport == "udp":
		err = r.runUDPClosed(ctx)
	default:
		return nil, fmt.Errorf("transport %q: want https or udp", opts.Transport)
	}
	if err != nil {
		return nil, err
	}
	d := time.Since(start)
	if r.span > 0 {
		d = r.span
	}
	r.finish(d)
	return &r.res, nil
}

// prepare blinds a pool of distinct requests once.
func (r *runner) prepare() error {
	pub := r.cred.Current
	for i := range 32 {
		inputs := make([][]byte, r.o.Batch)
		for j := range inputs {
			h := sha256.Sum256([]byte("veil bench " + strconv.Itoa(i) + "/" + strconv.Itoa(j)))
			inputs[j] = h[:]
		}
		bl, err := pub.Blind(rand.Reader, inputs)
		if err != nil {
			return err
		}
		body, err := kswire.AppendRequest(nil, &kswire.Request{Suite: pub.Suite(), KeyID: pub.ID(), Elements: bl.Elements})
		if err != nil {
			return err
		}
		r.reqs = append(r.reqs, prepared{body, bl})
	}
	return nil
}

// check verifies an answer when Verify is set.
func (r *runner) check(p *prepared, raw []byte) error {
	if !r.o.Verify {
		return nil
	}
	resp, err := kswire.ParseResponse(raw, r.cred.Current, r.o.Batch)
	if err != nil {
		return err
	}
	_, err = r.cred.Current.Finalize(p.bl, resp.Evals, resp.Proof)
	return err
}

// record merges one worker's figures.
func (r *runner) record(lat []time.Duration, sent, ok, errs, drops int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat = append(r.lat, lat...)
	r.res.Sent += sent
	r.res.Requests += ok
	r.res.Errors += errs
	r.res.Drops += drops
}

func (r *runner) finish(d time.Duration) {
	res := &r.res
	res.Seconds = d.Seconds()
	if !res.Static {
		res.Evaluations = res.Requests * int64(r.o.Batch)
	}
	res.ReqPerSec = float64(res.Requests) / res.Seconds
	res.EvalPerSec = float64(res.Evaluations) / res.Seconds
	if res.Sent > 0 {
		res.DropPct = 100 * float64(res.Drops) / float64(res.Sent)
	}
	slices.Sort(r.lat)
	if n := len(r.lat); n > 0 {
		res.P50ms = float64(r.lat[n/2].Microseconds()) / 1000
		res.P99ms = float64(r.lat[min(n-1, n*99/100)].Microseconds()) / 1000
	}
}
