package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	ristretto "github.com/bwesterb/go-ristretto"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/elgamal"
)

// Client talks to one Metal deployment.
type Client struct {
	base [2]string
	h    [2]*http.Client
	p    access.Params
	pk   elgamal.PublicKey
	// BusyRetry is how long a call answered "busy (try again)" (409 with Retry-After: more
	// requests were waiting for their other part than the servers let wait, as in a burst)
	// is tried again, with a fresh request id, before the error is returned (retry.go).
	// New sets DefaultBusyRetry; zero or less: never.
	BusyRetry time.Duration
	// UnreachableRetry is how long a call is tried again while a server is down or cannot
	// reach the other (Server 1 answers 503 "cannot reach server 2 ... try again", a server
	// shutting down answers 503 "shutting down (try again)", or a server refuses the
	// connection: a restart of either), with a fresh request id each time (retry.go). Only
	// answers saying the call never ran are retried. New sets DefaultUnreachableRetry; zero
	// or less: never.
	UnreachableRetry time.Duration
	// Stall: a download (the broadcast list) that gets nothing for this long is cut
	// (zero: DefaultStall); one that keeps coming is not, however long it takes.
	Stall time.Duration
}

// Account is what CreateAccount returns: the capability and the file ids it grants.
type Account struct {
	Capability []byte
	First      uint64
	Count      uint32
}

// New connects to both servers and checks they form one deployment (same parameters, each
// knows the other's key share).
func New(ctx context.Context, d access.Deployment) (*Client, error) {
	c := &Client{base: [2]string{strings.TrimRight(d.Server1, "/"), strings.TrimRight(d.Server2, "/")}, BusyRetry: DefaultBusyRetry, UnreachableRetry: DefaultUnreachableRetry}
	for i, ca := range []string{d.CA1, d.CA2} {
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM([]byte(ca)) {
			return nil, fmt.Errorf("metal: server %d's CA is not PEM", i+1)
		}
		c.h[i] = &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: p, MinVersion: tls.VersionTLS13}, ForceAttemptHTTP2: true}}
	}
	info, err := c.both(ctx, "GET", "/v1/info", nil, nil)
	if err != nil {
		return nil, err
	}
	if len(info[0]) != access.ParamsLen+64 || len(info[1]) != access.ParamsLen+64 || !bytes.Equal(info[0][:access.ParamsLen], info[1][:access.ParamsLen]) {
		return nil, errors.New("metal: the two servers do not run one deployment (parameters differ)")
	}
	if c.p, err = access.DecodeParams(info[0][:access.ParamsLen]); err != nil {
		return nil, err
	}
	x1, x2 := info[0][access.ParamsLen:access.ParamsLen+32], info[1][access.ParamsLen:access.ParamsLen+32]
	if !bytes.Equal(info[0][access.ParamsLen+32:], x2) || !bytes.Equal(info[1][access.ParamsLen+32:], x1) {
		return nil, errors.New("metal: the servers have not met yet or disagree on their keys (is the 2PC link up?)")
	}
	var p1, p2 ristretto.Point
	var b1, b2 [32]byte
	copy(b1[:], x1)
	copy(b2[:], x2)
	if !p1.SetBytes(&b1) || !p2.SetBytes(&b2) {
		return nil, errors.New("metal: a server's key share is not a point")
	}
	c.pk = elgamal.JoinPublic(&p1, &p2)
	return c, nil
}

// Params are the deployment's parameters.
func (c *Client) Params() access.Params { return c.p }

// CreateAccount creates an account and returns its capability and file ids.
func (c *Client) CreateAccount(ctx context.Context) (Account, error) {
	r, err := c.both(ctx, "POST", "/v1/account", []byte{}, []byte{})
	if err != nil {
		return Account{}, err
	}
	n := ac.CapabilityLen + 8
	if len(r[0]) != n || len(r[1]) != n {
		return Account{}, errors.New("metal: account replies of the wrong size")
	}
	capability, _ := ac.Combine(r[0][:ac.CapabilityLen], r[1][:ac.CapabilityLen])
	firstB, _ := ac.Combine(r[0][ac.CapabilityLen:], r[1][ac.CapabilityLen:])
	first, ids := binary.LittleEndian.Uint64(firstB), uint64(1)<<c.p.D
	// The servers' next-id counter is secret-shared and keeps counting past the last id; a
	// range beyond 2^D would be a capability for ids that do not exist.
	if first >= ids {
		return Account{}, fmt.Errorf("metal: no file ids left: all %d of the deployment's file ids are granted to earlier accounts", ids)
	}
	count := uint64(c.p.FilesPerAccount)
	if first+count > ids {
		count = ids - first // the last range is cut at 2^D
	}
	return Account{Capability: capability, First: first, Count: uint32(count)}, nil
}

// Read returns file's block (BlockSize bytes; zeros if never written), or
// access.ErrRefused.
func (c *Client) Read(ctx context.Context, capability []byte, file uint64) ([]byte, error) {
	return c.access(ctx, capability, file, ac.Read, nil)
}

// Write replaces file's block by data (at most BlockSize bytes, zero-padded).
func (c *Client) Write(ctx context.Context, capability []byte, file uint64, data []byte) error {
	_, err := c.access(ctx, capability, file, ac.Write, data)
	return err
}

func (c *Client) access(ctx context.Context, capability []byte, file uint64, op ac.Perm, data []byte) ([]byte, error) {
	to1, to2, err := access.NewRequest(c.p, c.pk, capability, file, op, data, rand.Reader)
	if err != nil {
		return nil, err
	}
	r, err := c.both(ctx, "POST", "/v1/access", to1, to2)
	if err != nil {
		return nil, err
	}
	return access.Finish(c.p, r[0], r[1])
}

// both sends each server its part under one fresh request id, concurrently (Server 2
// waits for Server 1's announcement of the id, Server 1 for Server 2's confirmation); a
// call answered busy, or while a server is down or unreachable, is sent again under a new
// id (retry).
func (c *Client) both(ctx context.Context, method, path string, b1, b2 []byte) (out [2][]byte, err error) {
	err = c.retry(ctx, func() error {
		out, err = c.bothOnce(ctx, method, path, b1, b2)
		return err
	})
	return out, err
}

func (c *Client) bothOnce(ctx context.Context, method, path string, b1, b2 []byte) ([2][]byte, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return [2][]byte{}, err
	}
	var out [2][]byte
	var errs [2]error
	cctx, cancel := context.WithCancel(ctx) // one server failing releases the other's wait
	defer cancel()
	done := make(chan int, 2)
	for i, b := range [][]byte{b1, b2} {
		go func() {
			var body io.Reader
			if b != nil {
				body = bytes.NewReader(append(id[:], b...))
			}
			if out[i], errs[i] = c.do(cctx, i, method, path, body); errs[i] != nil {
				cancel()
			}
			done <- i
		}()
	}
	<-done
	<-done
	return out, joinParts(ctx, errs)
}

// joinParts is a call's failure from both servers' errors, less the cancellation of one
// part that followed the other's failure (ctx, the caller's, still live): one line, the
// server's answer, instead of it and "context canceled" for the other server.
func joinParts(ctx context.Context, errs [2]error) error {
	if ctx.Err() == nil {
		for i := range errs {
			if errs[i] != nil && !errors.Is(errs[i], context.Canceled) && errors.Is(errs[1-i], context.Canceled) {
				return errs[i]
			}
		}
	}
	return errors.Join(errs[0], errs[1])
}

// stream is do for a reply read as it arrives, by read: no limit on its length (read
// bounds what it keeps), nor on how long it takes while it keeps coming. The answer's
// head is bounded as a call's (the http.Client's Timeout); then each read must get
// something within the stall timeout (Client.Stall). A reply other than 200 is an error,
// its text cut at 64 KiB. (The http.Client's Timeout, 10 minutes, bounded the whole
// download: a long list read over a slow network was cut.)
func (c *Client) stream(ctx context.Context, i int, method, path string, body []byte, read func(io.Reader) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := c.Stall
	if stall <= 0 {
		stall = DefaultStall
	}
	stalled := fmt.Errorf("metal server %d: the download stalled (nothing for %v)", i+1, stall)
	hc := *c.h[i]
	watch := time.AfterFunc(hc.Timeout, func() { cancel(stalled) })
	defer watch.Stop()
	if hc.Timeout <= 0 {
		watch.Stop()
	}
	hc.Timeout = 0
	req, err := http.NewRequestWithContext(ctx, method, c.base[i]+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		if context.Cause(ctx) == stalled {
			return stalled
		}
		return &connError{server: i + 1, err: err}
	}
	defer resp.Body.Close()
	watch.Reset(stall)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return replyError(i, resp, b)
	}
	err = read(bufio.NewReaderSize(&stallReader{r: resp.Body, t: watch, d: stall}, 64<<10))
	if err != nil && context.Cause(ctx) == stalled {
		return stalled
	}
	return err
}

// DefaultStall is how long a download may get nothing before the client gives up.
const DefaultStall = 2 * time.Minute

// stallReader restarts t (to d) whenever a read gets something.
type stallReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (p *stallReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.t.Reset(p.d)
	}
	return n, err
}

func (c *Client) do(ctx context.Context, i int, method, path string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base[i]+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.h[i].Do(req)
	if err != nil {
		return nil, &connError{server: i + 1, err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("metal server %d: %w", i+1, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, replyError(i, resp, b)
	}
	return b, nil
}
