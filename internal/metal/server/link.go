package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// The 2PC link: Server 1 dials Server 2's /v1/peer with its client certificate and both
// switch the connection to the twopc stream ("Upgrade: veil-metal-2pc").

const upgradeProto = "veil-metal-2pc"

// conn is an upgraded connection: reads through the HTTP reader (which may hold bytes
// already), writes straight to the connection.
// Its reads and writes have deadlines (linkstate.go).
type conn struct {
	net.Conn
	r     *bufio.Reader
	query bool          // Server 1: Server 2 answered the upgrade with link version 2 (it takes queries)
	quiet time.Duration // outside calls: each read or write within this (0: no limit)
	mu    sync.Mutex
	until time.Time // in a call or the set-up: every read and write by then
	why   error     // why the liveness probe cut the link (alive.go), nil if it did not
}

func (s *Server) handlePeer(w http.ResponseWriter, r *http.Request) {
	c, rw, ok := upgradeFromServer1(w, r, upgradeProto, upgradeResponse(!s.linkV1.Load()))
	if !ok {
		return
	}
	select {
	case old := <-s.links: // an unclaimed older link: replace it
		old.Close()
	default:
	}
	// Server 1 dials a new link only once it has given up the old one: a link still
	// running here is one whose Server 1 vanished without closing it (a stopped process,
	// a cut network), which would otherwise keep this server from taking the new one
	// until its reads failed, if ever.
	s.mu.Lock()
	if s.cur != nil {
		s.cur.Close()
	}
	s.mu.Unlock()
	s.links <- &conn{Conn: c, r: rw.Reader}
}

// upgradeFromServer1 checks that r comes from Server 1 (its client certificate) and asks
// to upgrade to proto, answers it with answer (a 101) and returns the connection, or
// answers the refusal itself.
func upgradeFromServer1(w http.ResponseWriter, r *http.Request, proto, answer string) (net.Conn, *bufio.ReadWriter, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || r.TLS.VerifiedChains[0][0].Subject.CommonName != "metal-server1" {
		http.Error(w, "the 2PC link needs Server 1's client certificate", http.StatusUnauthorized)
		return nil, nil, false
	}
	if r.Header.Get("Upgrade") != proto {
		http.Error(w, "expected Upgrade: "+proto, http.StatusBadRequest)
		return nil, nil, false
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "connection cannot be upgraded (HTTP/2?)", http.StatusBadRequest)
		return nil, nil, false
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, false
	}
	c.SetDeadline(time.Time{})
	rw.WriteString(answer)
	if err := rw.Flush(); err != nil {
		c.Close()
		return nil, nil, false
	}
	return c, rw, true
}

// upgradeResponse is Server 2's answer to the link upgrade; with the link version header
// when it takes queries.
func upgradeResponse(query bool) string {
	v := ""
	if query {
		v = linkHeader + ": " + linkVersion + "\r\n"
	}
	return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: " + upgradeProto + "\r\nConnection: Upgrade\r\n" + v + "\r\n"
}

func (s *Server) dialPeer(ctx context.Context) (*conn, error) {
	nc, br, resp, err := s.dialUpgrade(ctx, "/v1/peer", upgradeProto, s.cfg.PairTimeout) // Server 2 answers the upgrade at once
	if err != nil {
		return nil, err
	}
	return &conn{Conn: nc, r: br, query: resp.Header.Get(linkHeader) == linkVersion, quiet: s.cfg.PairTimeout}, nil
}

// dialUpgrade opens TLS to Server 2 with Server 1's client certificate and upgrades path
// to proto (ctx and a 10 s bound cover the dial and the TLS handshake); Server 2's answer
// must come within wait. The connection's deadline stays set.
func (s *Server) dialUpgrade(ctx context.Context, path, proto string, wait time.Duration) (net.Conn, *bufio.Reader, *http.Response, error) {
	u, err := url.Parse(s.peer.Endpoint)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := ClientTLS([]byte(s.peer.CA), []byte(s.peer.Cert), []byte(s.peer.Key))
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.NextProtos = []string{"http/1.1"}
	d := tls.Dialer{Config: cfg, NetDialer: &net.Dialer{Timeout: 10 * time.Second}}
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, nil, nil, err
	}
	nc.SetDeadline(time.Now().Add(wait))
	io.WriteString(nc, upgradeRequest(path, u.Host, proto))
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err == nil && resp.StatusCode != http.StatusSwitchingProtocols {
		err = &refusedUpgrade{resp.Status}
	}
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return nc, br, resp, nil
}

// upgradeRequest is Server 1's request to upgrade path on host to proto.
func upgradeRequest(path, host, proto string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: " + proto + "\r\nConnection: Upgrade\r\nContent-Length: 0\r\n\r\n"
}

// refusedUpgrade is Server 2 answering an upgrade with another status than 101.
type refusedUpgrade struct{ status string }

func (e *refusedUpgrade) Error() string { return "server 2 refused the 2PC link: " + e.status }

// linkLoop keeps the 2PC link up and runs calls over it until ctx ends.
func (s *Server) linkLoop(ctx context.Context) {
	for ctx.Err() == nil {
		c, err := s.nextLink(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("2PC link", "err", err)
				s.reach.lost(err)
				sleep(ctx, s.cfg.RedialInterval)
			}
			continue
		}
		s.reach.found() // requests wait for the link's set-up (bounded by the call timeout)
		stop := context.AfterFunc(ctx, func() { c.Close() })
		s.mu.Lock()
		s.cur = c
		s.mu.Unlock()
		err = s.runLink(ctx, c)
		stop()
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		c.Close()
		s.setUp(false)
		if ctx.Err() == nil {
			err = s.silent(err)
			s.log.Warn("2PC link lost", "err", err)
			s.reach.lost(err)
			sleep(ctx, s.cfg.RedialInterval)
		}
	}
}

func (s *Server) nextLink(ctx context.Context) (*conn, error) {
	if s.role == 1 {
		return s.dialPeer(ctx)
	}
	select {
	case c := <-s.links:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Server) runLink(ctx context.Context, c *conn) error {
	if s.role == 1 {
		defer s.watch(ctx, c)() // a silent Server 2 cuts the link within the silence timeout (alive.go)
	} else {
		s.pend.run(false)      // the set-up: Server 1 may hold requests for this link
		defer s.pend.run(true) // no link: Server 1 holds none it could announce (pending.go)
	}
	c.bound(time.Now().Add(s.cfg.CallTimeout)) // the set-up loads the state: a call's time
	var rw io.ReadWriter = c
	if s.cfg.LinkDelay > 0 {
		dw := newDelayWriter(c, s.cfg.LinkDelay)
		defer dw.Close()
		rw = struct {
			io.Reader
			io.Writer
		}{c, dw}
	}
	sess, err := twopc.NewSession(rw, twopc.Role(s.role), rand.Reader)
	if err != nil {
		return err
	}
	p, err := access.NewParty(sess, s.store, rand.Reader)
	if err != nil {
		return err
	}
	if err := s.newShareParty(sess, p); err != nil {
		return err
	}
	c.bound(time.Time{})
	s.setUp(true) // NewParty reloaded the committed state: a failed call left memory out of step
	if p.RolledBack {
		s.log.Warn("undid this server's last call: the other server had crashed before committing it", "calls", p.Calls())
	}
	s.log.Info("2PC link up", "calls", p.Calls())
	if s.role == 1 {
		return s.lead(ctx, sess, p, c.query)
	}
	s.pend.run(true)
	return s.follow(ctx, sess, p)
}

func (s *Server) setUp(v bool) {
	s.mu.Lock()
	s.up = v
	s.mu.Unlock()
	g := 0.0
	if v {
		g = 1
	}
	s.m.peerUp.Set(g)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
