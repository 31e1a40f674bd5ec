package ksclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/kswire"
)

// udpTransport sends requests as datagrams of a session opened over HTTPS (OPRFv2).
// Replies are matched to requests by sequence number; a timeout makes the next attempt
// open a fresh session (the key server may have restarted).
type udpTransport struct {
	https   *httpsTransport
	addr    string
	timeout time.Duration
	mu      sync.Mutex
	s       *udpSession
}

type udpSession struct {
	g       *kswire.Grant
	conn    *net.UDPConn
	mu      sync.Mutex
	seq     uint64
	pending map[uint64]chan reply
	stale   bool
	renewAt time.Time // replaced from then on: 30 s before expiry, or a quarter of a shorter life
}

// renewMargin is how long before its expiry a session is replaced.
const renewMargin = 30 * time.Second

type reply struct {
	typ  byte
	body []byte
}

func newUDP(h *httpsTransport, opts Options) *udpTransport {
	return &udpTransport{https: h, addr: opts.UDPAddr, timeout: opts.Timeout}
}

// defaultDatagram is assumed before the first session tells the real limit.
const defaultDatagram = 1400

func (u *udpTransport) maxElements(elemSize, proofSize int) int {
	limit := defaultDatagram
	u.mu.Lock()
	if u.s != nil {
		limit = u.s.g.MaxDatagram
	}
	u.mu.Unlock()
	room := limit - kswire.DatagramOverhead - 12 - proofSize
	return max(1, room/elemSize)
}

func (u *udpTransport) prepare(ctx context.Context) {
	actx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	u.session(actx) // a failure resurfaces, classified, in the first attempt
}

func (u *udpTransport) session(ctx context.Context) (*udpSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s := u.s; s != nil {
		s.mu.Lock()
		ok := !s.stale && time.Now().Before(s.renewAt)
		s.mu.Unlock()
		if ok {
			return s, nil
		}
		u.end(ctx, s) // frees its slot on the server now, not when it idles out
		u.s = nil
	}
	// The socket first: a grant this client cannot use (an address that does not resolve)
	// held one of its sessions on the key server until it idled out (5 minutes; 64 per
	// client), one per request, and then the key server gave it, and its other devices,
	// no UDP session at all.
	ua, err := net.ResolveUDPAddr("udp", u.addr)
	if err != nil {
		return nil, fmt.Errorf("udp address %q: %w", u.addr, err)
	}
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, errRetry{err}
	}
	raw, err := u.https.post(ctx, "/v1/session", nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	g, err := kswire.ParseGrant(raw)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: session grant: %v", ErrBadResponse, err)
	}
	conn.SetReadBuffer(4 << 20)
	margin := max(0, min(renewMargin, time.Until(g.Expiry)/4)) // a short --session-ttl is used, not renewed per request
	s := &udpSession{g: g, conn: conn, pending: map[uint64]chan reply{}, renewAt: g.Expiry.Add(-margin)}
	go s.read()
	u.s = s
	return s, nil
}

// read dispatches authenticated replies to their waiting requests until the socket closes.
func (s *udpSession) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP port unreachable while the server restarts
		}
		d, err := kswire.OpenDatagram(buf[:n], &s.g.MACKey)
		if err != nil || d.Session != s.g.ID || d.Type == kswire.TypeRequest {
			continue
		}
		s.mu.Lock()
		ch := s.pending[d.Seq]
		delete(s.pending, d.Seq)
		s.mu.Unlock()
		if ch != nil {
			ch <- reply{d.Type, append([]byte(nil), d.Body...)}
		}
	}
}

func (u *udpTransport) roundTrip(ctx context.Context, req []byte) ([]byte, error) {
	s, err := u.session(ctx)
	if err != nil {
		if !refusedSession(err) || ctx.Err() != nil {
			return nil, err
		}
		// The key server answers over HTTPS but gives no UDP session (its session limit,
		// no UDP endpoint): ask over HTTPS rather than fall back to a random key.
		return u.https.roundTrip(ctx, req)
	}
	ch := make(chan reply, 1)
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.pending[seq] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, seq)
		s.mu.Unlock()
	}()
	d := kswire.AppendDatagram(nil, &kswire.Datagram{Type: kswire.TypeRequest, Session: s.g.ID, Seq: seq, Body: req}, &s.g.MACKey)
	if _, err := s.conn.Write(d); err != nil {
		return nil, errRetry{err}
	}
	select {
	case r := <-ch:
		if r.typ == kswire.TypeResponse {
			return r.body, nil
		}
		return nil, udpError(r.body)
	case <-ctx.Done():
		s.mu.Lock()
		s.stale = true
		s.mu.Unlock()
		return nil, errRetry{fmt.Errorf("udp request %d: %w", seq, ctx.Err())}
	}
}

func udpError(body []byte) error {
	if len(body) != 1 {
		return fmt.Errorf("%w: malformed error datagram", ErrBadResponse)
	}
	switch body[0] {
	case kswire.CodeRateLimited:
		return ErrRateLimited
	case kswire.CodeRevoked:
		return ErrUnauthorized
	case kswire.CodeUnknownKey:
		return fmt.Errorf("%w: key not served", ErrBadResponse)
	case kswire.CodeBatchTooLarge:
		return fmt.Errorf("%w: %w", ErrUnexpected, errBatchTooLarge)
	}
	return fmt.Errorf("%w: request refused (code %d)", ErrBadResponse, body[0])
}

func (u *udpTransport) close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), u.timeout)
		u.end(ctx, u.s)
		cancel()
		u.s = nil
	}
	return u.https.close()
}

// end closes a session: its socket, and on the key server (DELETE /v1/session, best
// effort: a server that does not answer lets it idle out).
func (u *udpTransport) end(ctx context.Context, s *udpSession) {
	s.conn.Close()
	u.https.del(ctx, "/v1/session", s.g.ID[:])
}
