package ksclient

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/oprf"
)

// Errors callers branch on.
var (
	ErrKSUnavailable = errors.New("key server unavailable")
	ErrRateLimited   = errors.New("key server rate limit reached")
	ErrBadResponse   = errors.New("key server answer failed verification")
	ErrUnauthorized  = errors.New("key server refused the credential")
	// ErrUnexpected is an HTTP status no key server sends for a valid request (404: no key
	// server at that URL): an address or version problem, not a failed verification.
	ErrUnexpected = errors.New("unexpected answer at the key server address")
)

// Defaults of Options.
const (
	DefaultTransport = "https"
	DefaultTimeout   = 2 * time.Second // t_R
	DefaultRetries   = 3               // the paper's choice
	DefaultMaxBatch  = 256
)

// Options configures a Client. Zero values take the defaults.
type Options struct {
	Transport string        // "https" (default) or "udp"
	Timeout   time.Duration // t_R: one attempt's timeout (default 2s); raise it for delay-mode servers
	Retries   int           // attempts before ErrKSUnavailable (default 3, the paper's choice)
	URL       string        // HTTPS URL override (default: the credential's)
	Replicas  []string      // further HTTPS URLs of the same key server (replicas sharing its directory); https transport only
	UDPAddr   string        // UDP address override (default: the credential's)
	MaxBatch  int           // most digests per request (default 256; UDP also fits the datagram limit)
	HTTP2     bool          // multiplex over one HTTP/2 connection instead of HTTP/1.1 keep-alive
	Logger    *slog.Logger  // default: discard
	Rand      io.Reader     // blinding randomness (default crypto/rand); for tests
}

// Client derives keys through one key server. It is safe for concurrent use.
type Client struct {
	cred *Credential
	opts Options
	log  *slog.Logger
	tr   transport

	// A key server in a delay mode answers one query of a client at a time and refuses
	// the others (errBusy). Once told so, or over UDP where a refusal is a silent drop,
	// the client sends one request at a time (serial) instead of falling back.
	oneAtATime atomic.Bool
	serial     chan struct{} // holds one token while a request is out (one-at-a-time mode)
	// delays: the key server refused a query because another of this client's was in
	// flight, so it is in a delay mode: giving up is then a DelayedError (delayed.go).
	delays atomic.Bool

	// serverMax is the request size a key server's 413 (its MaxBatch below this client's)
	// taught derive; 0 until then.
	serverMax atomic.Int64

	// Concurrent DeriveKeys calls are coalesced (coalesce.go): loop gathers them from reqs
	// into requests, at most MaxInflight (slots) at once, run under ctx; Close cancels ctx,
	// stops the loop and waits (wg) for the requests before closing the transport.
	ctx       context.Context
	cancel    context.CancelFunc
	reqs      chan *keyReq
	slots     chan struct{}
	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// errBusy is the key server's "a query of this client is already in flight".
var errBusy = errors.New("a query of this client is already in flight")

// transport sends one encoded Request and returns the encoded Response.
type transport interface {
	roundTrip(ctx context.Context, req []byte) ([]byte, error)
	maxElements(elemSize, proofSize int) int
	prepare(ctx context.Context) // opens what maxElements depends on, if it can
	close() error
}

// errRetry marks an attempt that may be repeated (timeouts, connection failures, 5xx).
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

var _ mle.KeyDeriver = (*Client)(nil)

// New builds a client for cred.
func New(cred *Credential, opts Options) (*Client, error) {
	if cred == nil {
		return nil, errors.New("ksclient: nil credential")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Retries <= 0 {
		opts.Retries = DefaultRetries
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	opts.MaxBatch = min(opts.MaxBatch, kswire.MaxBatch)
	if opts.URL == "" {
		opts.URL = cred.p.URL
	}
	if opts.UDPAddr == "" {
		opts.UDPAddr = cred.p.UDP
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	u, err := url.Parse(opts.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("key server url %q: want https://host:port", opts.URL)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		host = u.Host
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cred.p.Cert}, RootCAs: cred.p.CAs,
		ServerName: host, MinVersion: tls.VersionTLS13}
	bases := []*url.URL{u}
	for _, r := range opts.Replicas {
		ru, err := url.Parse(r)
		if err != nil || ru.Scheme != "https" || ru.Host == "" {
			return nil, fmt.Errorf("key server replica url %q: want https://host:port", r)
		}
		bases = append(bases, ru)
	}
	if len(bases) > 1 {
		if opts.Transport == "udp" {
			return nil, errors.New("key server replicas: the udp transport's sessions live on one replica; use https")
		}
		tlsCfg.ServerName = "" // each replica is checked against its own host name
	}
	h := newHTTPS(bases, tlsCfg, opts)
	c := &Client{cred: cred, opts: opts, log: opts.Logger, serial: make(chan struct{}, 1),
		reqs: make(chan *keyReq), slots: make(chan struct{}, MaxInflight), stop: make(chan struct{})}
	switch opts.Transport {
	case "", DefaultTransport:
		c.tr = h
	case "udp":
		if opts.UDPAddr == "" {
			return nil, errors.New("udp transport: no UDP address in the credential or options")
		}
		c.tr = newUDP(h, opts)
		c.oneAtATime.Store(true)
	default:
		return nil, fmt.Errorf("transport %q: want https or udp", opts.Transport)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1) // the loop counts too: Close waits for it, then for its requests
	go func() { defer c.wg.Done(); c.loop() }()
	return c, nil
}

// KeyID is the id of the key new derivations use (the credential's current key).
func (c *Client) KeyID() string { return c.cred.p.Current.ID().String() }

// Close fails the derivations still waiting (ErrClosed), waits for the requests in flight
// to end, and releases connections and sockets.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { c.cancel(); close(c.stop) })
	c.wg.Wait()
	return c.tr.close()
}

// DeriveKeys derives one key per digest under the current key, in requests of at most
// MaxBatch digests, shared with the other callers' concurrent derivations (coalesce). It
// returns all keys or none.
func (c *Client) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	return c.coalesce(ctx, ds)
}

// DeriveKeysWith derives keys under an older key of the ring, named by its id (for data
// whose records name that key). Rare, so not coalesced with other callers'.
func (c *Client) DeriveKeysWith(ctx context.Context, keyID string, ds []mle.Digest) ([]mle.Key, error) {
	id, err := oprf.ParseKeyID(keyID)
	if err != nil {
		return nil, err
	}
	pub := c.cred.p.Keys[id]
	if pub == nil {
		return nil, fmt.Errorf("key %s is not pinned in credential %q", keyID, c.cred.p.Name)
	}
	return c.derive(ctx, pub, ds)
}

// batch derives one request's worth of keys, retrying timeouts up to Retries attempts.
// Each attempt blinds afresh, so the key server never sees the same bytes twice. A request
// refused because another query of this client is in flight (delay modes) does not count
// as an attempt: the client switches to one request at a time and tries again, until the
// server takes it or the client's whole patience (Retries x t_R) is spent.
func (c *Client) batch(ctx context.Context, pub oprf.PublicKey, ds []mle.Digest) ([]mle.Key, error) {
	inputs := make([][]byte, len(ds))
	for i := range ds {
		inputs[i] = ds[i][:]
	}
	start := time.Now()
	deadline := start.Add(time.Duration(c.opts.Retries) * c.opts.Timeout)
	pause := 10 * time.Millisecond // between busy refusals: the other query may take t_D
	var last error
	for attempt := 1; attempt <= c.opts.Retries; {
		b, err := pub.Blind(c.opts.Rand, inputs)
		if err != nil {
			return nil, err
		}
		req, err := kswire.AppendRequest(nil, &kswire.Request{Suite: pub.Suite(), KeyID: pub.ID(), Elements: b.Elements})
		if err != nil {
			return nil, err
		}
		raw, err := c.send(ctx, req, deadline)
		switch {
		case err == nil:
			return c.finish(pub, b, raw, len(ds))
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, errBusy):
			c.delays.Store(true)
			if !c.oneAtATime.Swap(true) {
				c.log.Debug("key server takes one query at a time: sending one request at a time")
			}
			if time.Now().Add(pause).After(deadline) {
				return nil, c.delayed(start)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(pause):
			}
			pause = min(2*pause, 500*time.Millisecond)
			continue
		}
		var r errRetry
		if !errors.As(err, &r) {
			if errors.Is(err, errNoTurn) && c.delays.Load() {
				return nil, c.delayed(start)
			}
			return nil, err
		}
		last = err
		c.log.Debug("key server attempt failed", "attempt", attempt, "err", err)
		attempt++
	}
	if c.delays.Load() && errors.Is(last, context.DeadlineExceeded) {
		return nil, c.delayed(start)
	}
	return nil, fmt.Errorf("%w: %d attempts failed, last: %w", ErrKSUnavailable, c.opts.Retries, last)
}

// send makes one round trip with the attempt timeout t_R; one at a time when the key
// server takes one query of this client at a time, waiting for the turn no longer than
// ctx and the client's patience (deadline) allow.
func (c *Client) send(ctx context.Context, req []byte, deadline time.Time) ([]byte, error) {
	if c.oneAtATime.Load() {
		wait, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		select { // a free turn is taken even at the deadline: only waiting for one gives up
		case c.serial <- struct{}{}:
		default:
			select {
			case c.serial <- struct{}{}:
			case <-wait.Done():
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, errNoTurn
			}
		}
		defer func() { <-c.serial }()
	}
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	return c.tr.roundTrip(actx, req)
}

func (c *Client) finish(pub oprf.PublicKey, b *oprf.Blinded, raw []byte, n int) ([]mle.Key, error) {
	resp, err := kswire.ParseResponse(raw, pub, n)
	if err == nil {
		var ks [][oprf.KeySize]byte
		if ks, err = pub.Finalize(b, resp.Evals, resp.Proof); err == nil {
			out := make([]mle.Key, len(ks))
			for i := range ks {
				out[i] = mle.Key(ks[i])
			}
			return out, nil
		}
	}
	c.log.Warn("key server answer rejected", "key", pub.ID().String(), "err", err)
	return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
}
