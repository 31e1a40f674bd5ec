package ksclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

type httpsTransport struct {
	base  *url.URL // the first replica (sessions, for the udp transport, live there)
	nodes *replicas
	hc    *http.Client
}

func newHTTPS(us []*url.URL, tlsCfg *tls.Config, opts Options) *httpsTransport {
	tr := &http.Transport{
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   opts.HTTP2,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: opts.Timeout,
	}
	if !opts.HTTP2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 keep-alive
	}
	// Redirects are not followed: they would carry requests wherever an answer points,
	// without TLS if it says http://. A 3xx is an unexpected answer like any other.
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &httpsTransport{base: us[0], nodes: newReplicas(us), hc: &http.Client{Transport: tr, CheckRedirect: noRedirect}}
}

func (h *httpsTransport) endpoint(p string) string {
	return strings.TrimSuffix(h.base.String(), "/") + p
}

// post sends body to path on the replicas in turn (replicas.go) and returns the 200
// answer; it classifies failures.
func (h *httpsTransport) post(ctx context.Context, path string, body []byte) ([]byte, error) {
	return h.nodes.send(func(base *url.URL) ([]byte, error) { return h.post1(ctx, base, path, body) })
}

func (h *httpsTransport) post1(ctx context.Context, base *url.URL, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base.String(), "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, errRetry{err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, errRetry{err}
	}
	msg := strings.TrimSpace(string(out))
	switch {
	case resp.StatusCode == http.StatusOK:
		return out, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		reason := resp.Header.Get("Veil-Reason")
		switch reason {
		case "in_flight": // a delay mode: batch waits its turn (or gives up: DelayedError)
			return nil, fmt.Errorf("%w (%w)", ErrRateLimited, errBusy)
		case "rate_limited", "": // the budget is spent: the sentinel says so in one phrase
			return nil, ErrRateLimited
		}
		return nil, fmt.Errorf("%w (reason %q)", ErrRateLimited, reason)
	case resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: %s", ErrUnauthorized, msg)
	case resp.StatusCode >= 500:
		return nil, errRetry{statusError{resp.StatusCode, fmt.Sprintf("http %d: %s", resp.StatusCode, msg)}}
	}
	if resp.StatusCode == http.StatusNotFound && (msg == "" || len(msg) > 200) {
		return nil, fmt.Errorf("%w: %w", ErrUnexpected, statusError{404, "http 404 at " + base.Host + " (not a veil key server, or a wrong URL)"})
	}
	return nil, fmt.Errorf("%w: %w", ErrUnexpected, statusError{resp.StatusCode, fmt.Sprintf("http %d: %s", resp.StatusCode, msg)})
}

// statusError is an HTTP answer other than 200, with the status code kept for callers
// that branch on it (the UDP transport's fallback to HTTPS).
type statusError struct {
	code int
	msg  string
}

func (e statusError) Error() string { return e.msg }

// refusedSession reports whether opening a UDP session failed because the key server
// answered that it gives none now (503: its session limit) or serves no UDP (404).
func refusedSession(err error) bool {
	var se statusError
	return errors.As(err, &se) && (se.code == http.StatusServiceUnavailable || se.code == http.StatusNotFound)
}

func (h *httpsTransport) roundTrip(ctx context.Context, req []byte) ([]byte, error) {
	return h.post(ctx, "/v1/evaluate", req)
}

func (h *httpsTransport) maxElements(int, int) int { return 1 << 30 }

func (h *httpsTransport) prepare(context.Context) {}

func (h *httpsTransport) close() error {
	h.hc.CloseIdleConnections()
	return nil
}

// del sends a DELETE with body to path; the answer is only checked for success.
func (h *httpsTransport) del(ctx context.Context, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, h.endpoint(path), bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%w: http %d", ErrUnexpected, resp.StatusCode)
	}
	return nil
}
