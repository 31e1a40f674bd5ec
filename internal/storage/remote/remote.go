package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// Backend is one user's namespace on a veil storage service.
type Backend struct {
	base   *url.URL // the first endpoint: request URLs are built on it, do sends them to any
	nodes  *endpoints
	user   string
	secret string
	client *http.Client
	stop   stopLatch // the service said it cannot store anything: puts fail here, at once
}

var _ storage.Backend = (*Backend)(nil)

// answerTimeout bounds the wait for the service's answer to a request once it is sent.
var answerTimeout = 5 * time.Minute

// New connects to the service at endpoint ("https://host:port", or "http://..." for a
// service started with --insecure-http) as cred's user. For https the service's
// certificate must chain to cred.CA when the credential carries one (the CA is pinned:
// system roots are not consulted), else to the system roots.
func New(endpoint string, cred storewire.Credential) (*Backend, error) {
	return NewMulti([]string{endpoint}, cred)
}

// NewMulti is New for a service served by several nodes (docs/deploy.md): requests are
// spread over the endpoints in turn, and one that cannot be reached (or answers 503) is
// left for the next (failover.go).
func NewMulti(endpointList []string, cred storewire.Credential) (*Backend, error) {
	var us []*url.URL
	for _, endpoint := range endpointList {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("remote: endpoint %q must be https://host:port or http://host:port", endpoint)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		us = append(us, u)
	}
	if len(us) == 0 {
		return nil, fmt.Errorf("remote: no endpoint")
	}
	var err error
	if _, err := cred.SecretBytes(); err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13}
	if cred.CA != "" {
		if tc.RootCAs, err = cred.CAPool(); err != nil {
			return nil, fmt.Errorf("remote: %w", err)
		}
	}
	tr := &http.Transport{
		TLSClientConfig:     tc,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: handshakeTimeout(len(us)),
		// A node that takes a request and never answers (a stopped process: its kernel
		// still acknowledges the connection and keepalives) fails the request, which then
		// moves to another node or is retried, instead of hanging the command forever.
		// Long: a put is answered once its blob is durable and committed, and waits out a
		// gc sweep on a one-node store (found by review: no timeout at all).
		ResponseHeaderTimeout: answerTimeout,
		WriteBufferSize:       256 << 10,
		ReadBufferSize:        256 << 10,
		// HTTP/1.1: one stream per connection moves large objects fastest.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &Backend{base: us[0], nodes: newEndpoints(us), user: cred.User, secret: cred.Secret, client: &http.Client{Transport: tr, CheckRedirect: refuseRedirect}}, nil
}

// handshakeTimeout bounds a TLS handshake with a node: 10 s with one node, 3 s when there
// are others to move to. A stopped node (SIGSTOP, a frozen VM) still completes TCP
// connects in its kernel and then never answers the handshake: each new connection to it
// cost 10 s before the request moved on (found deploying two nodes). 3 s is many round
// trips even across continents.
func handshakeTimeout(nodes int) time.Duration {
	if nodes > 1 {
		return 3 * time.Second
	}
	return 10 * time.Second
}

// refuseRedirect stops the client at a 3xx: a redirect would send the user's credentials
// and data wherever Location points (plain http:// included), and the store API never
// redirects (a 3xx is answered as an unexpected status).
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close releases idle connections.
func (b *Backend) Close() error {
	b.client.CloseIdleConnections()
	return nil
}

// url builds base + route + escaped path segments.
func (b *Backend) url(route, path string, q url.Values) string {
	var sb strings.Builder
	sb.WriteString(b.base.String())
	sb.WriteString("/" + storewire.Version + "/" + route + "/")
	for i, seg := range strings.Split(path, "/") {
		if i > 0 {
			sb.WriteByte('/')
		}
		sb.WriteString(url.PathEscape(seg))
	}
	if len(q) > 0 {
		sb.WriteString("?" + q.Encode())
	}
	return sb.String()
}

// do sends a request; a streamed body (size < 0 means unknown; declared says the
// caller streams) goes chunked with its length in HeaderDeclaredLength.
func (b *Backend) do(ctx context.Context, method, u string, body io.Reader, size int64, streamed bool) (*http.Response, error) {
	return b.nodes.send(b.base.String(), u, body, streamed, func(u string) (*http.Response, error) {
		return b.do1(ctx, method, u, body, size, streamed)
	})
}

func (b *Backend) do1(ctx context.Context, method, u string, body io.Reader, size int64, streamed bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	switch {
	case streamed:
		req.ContentLength = -1
		if size >= 0 {
			req.Header.Set(storewire.HeaderDeclaredLength, strconv.FormatInt(size, 10))
		}
	case body != nil:
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	if storage.Verify(ctx) {
		req.Header.Set(storewire.HeaderVerifyStored, "1")
	}
	req.SetBasicAuth(b.user, b.secret)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e storewire.Error
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(data, &e) != nil || e.Code == "" {
			return nil, &serviceError{resp.StatusCode, fmt.Errorf("store: HTTP %s", resp.Status), nil}
		}
		return nil, &serviceError{resp.StatusCode, e.AsError(), &e}
	}
	return resp, nil
}

// call does a request whose answer is empty or JSON decoded into out; an idempotent one
// is retried (RetryBackoff) while the service does not answer.
func (b *Backend) call(ctx context.Context, method, u string, body []byte, out any) error {
	if !idempotent(method, u) {
		return b.call1(ctx, method, u, body, out)
	}
	return retry(ctx, func() error { return b.call1(ctx, method, u, body, out) })
}

func (b *Backend) call1(ctx context.Context, method, u string, body []byte, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	resp, err := b.do(ctx, method, u, r, int64(len(body)), false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(out); err != nil {
		return fmt.Errorf("store: bad answer: %v", err)
	}
	// Read the answer to its end: the decoder stops after the JSON value, and a chunked
	// answer (a listing over the service's 2 KiB buffer) closed before its last chunk
	// closes the connection, so the next request paid a new TCP and TLS handshake.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return nil
}

// Put uploads r. On a failing r the request is aborted and the service stores nothing.
func (b *Backend) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if err := storage.CheckPath(dir, name); err != nil {
		return err
	}
	if err := b.stop.check(); err != nil {
		return opErr("put", storage.Join(dir, name), err)
	}
	body := &trackReader{r: storage.ExactReader(ctx, r, size)}
	resp, err := b.do(ctx, http.MethodPut, b.url("files", storage.Join(dir, name), nil), body, size, true)
	if body.err != nil && !errors.Is(body.err, io.EOF) {
		err = body.err // the reader's own failure explains the aborted request best
	}
	if err != nil {
		b.stop.note(err)
		return opErr("put", storage.Join(dir, name), err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

type trackReader struct {
	r   io.Reader
	err error
}

func (t *trackReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// Get downloads dir/name, checking it against the hash and integrity trailer the service
// sends; a mismatch is storage.ErrIntegrity.
func (b *Backend) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if err := storage.CheckPath(dir, name); err != nil {
		return nil, err
	}
	var resp *http.Response
	err := retry(ctx, func() (err error) {
		resp, err = b.do(ctx, http.MethodGet, b.url("files", storage.Join(dir, name), nil), nil, 0, false)
		return err
	})
	if err != nil {
		return nil, opErr("get", storage.Join(dir, name), err)
	}
	if want, err := hex.DecodeString(resp.Header.Get(storewire.HeaderContentSHA256)); err != nil || len(want) != sha256.Size {
		resp.Body.Close()
		return nil, fmt.Errorf("get %s: answer lacks a valid %s header: %w", storage.Join(dir, name), storewire.HeaderContentSHA256, storage.ErrIntegrity)
	}
	return &checkedBody{resp: resp, what: storage.Join(dir, name)}, nil
}

// checkedBody fails with ErrIntegrity at the end unless the service's trailer says the
// content matched its hash while being sent. (The client does not hash again: TLS already
// protects the bytes in transit, and a second SHA-256 pass halved read throughput.)
type checkedBody struct {
	resp *http.Response
	what string
	err  error
}

func (c *checkedBody) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.resp.Body.Read(p)
	if err == io.EOF {
		if c.resp.Trailer.Get("Veil-Integrity") != "ok" {
			c.err = fmt.Errorf("get %s: the service found the content corrupt: %w", c.what, storage.ErrIntegrity)
			return n, c.err
		}
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

func (c *checkedBody) Close() error { return c.resp.Body.Close() }

// BatchCreates says PutBatch sends storage.Object.Create (batch version 2; a service
// older than it refuses the batch, storing nothing).
func (b *Backend) BatchCreates() {}

// BatchAbsents says PutBatch sends storage.Object.Absent (batch version 3; a service older
// than it refuses the batch, storing nothing).
func (b *Backend) BatchAbsents() {}

// BatchMatches says PutBatch sends storage.Object.Match (batch version 4; a service older
// than it refuses the batch, storing nothing, and PutBatch returns an error that wraps
// storage.ErrNoConditions, as well as storewire.ErrBadBatch, the service's answer).
func (b *Backend) BatchMatches() {}

var _ storage.MatchBatcher = (*Backend)(nil)

// BatchLarge says PutBatch sends one object over storage.BatchMaxObjectSize when asked
// (a service older than session 10 refuses such a batch with storage.ErrTooLarge, storing
// nothing).
func (b *Backend) BatchLarge() {}

// PutBatch stores small objects with one request (POST /v1/batch): one round trip and one
// commit on the service for all of them. Like Put it is not retried here (the caller
// replays it); the batch is atomic on the service.
func (b *Backend) PutBatch(ctx context.Context, objs []storage.Object) error {
	if len(objs) == 0 {
		return nil
	}
	if err := storage.CheckBatch(objs, true); err != nil {
		return err
	}
	if err := b.stop.check(); err != nil {
		return fmt.Errorf("put batch: %w", err)
	}
	size := 3
	for _, o := range objs {
		size += 1 + 2 + len(o.Dir) + 1 + len(o.Name) + 4 + len(o.Data)
		if o.Match != nil {
			size += len(o.Match)
		}
	}
	body := storewire.AppendBatch(make([]byte, 0, size), objs)
	err := b.call1(ctx, http.MethodPost, b.base.String()+"/"+storewire.Version+"/batch", body, nil)
	if err != nil {
		b.stop.note(err)
		if body[0] == storewire.BatchVersionMatch && errors.Is(err, storewire.ErrBadBatch) {
			// The body is canonical (FuzzReadBatch), so a service that cannot parse it
			// is one older than version 4: it stored nothing.
			return fmt.Errorf("put batch of %d: the service has no match conditions (older than batch version %d): %w: %w",
				len(objs), storewire.BatchVersionMatch, storage.ErrNoConditions, err)
		}
		return fmt.Errorf("put batch of %d: %w", len(objs), err)
	}
	return nil
}

// opErr is the error of the request op on the object obj: it names the object when the
// service answered (or a transfer failed), not when no connection to it could be made,
// where the object, an encrypted name, tells the user nothing (docs/scripting.md: messages
// name the user's paths). Found by a user walkthrough: "veil: docs/a.txt: get
// 1qJ7yENII1Rpyn.../dL5jvNjO0dm4QJEj.key: 127.0.0.1:7480: connection refused".
// The service's own message usually begins with the same words ("put a/b: not found"):
// they are said once.
func opErr(op, obj string, err error) error {
	if storage.DialFailed(err) != nil {
		return err
	}
	what := op + " " + obj
	if se, ok := err.(*serviceError); ok && se.body != nil && strings.HasPrefix(se.body.Message, what+": ") {
		trimmed := *se.body
		trimmed.Message = strings.TrimPrefix(trimmed.Message, what+": ")
		err = &serviceError{se.status, trimmed.AsError(), &trimmed}
	}
	return fmt.Errorf("%s: %w", what, err)
}
