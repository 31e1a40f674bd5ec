package keyserver

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/kswire"
)

// session is one UDP session (OPRFv2): opened over mutual TLS, then authenticated per
// datagram by HMAC-SHA256 under key, with strictly increasing sequence numbers.
type session struct {
	client string
	key    [kswire.MACKeySize]byte
	expiry time.Time
	mu     sync.Mutex
	seq    uint64    // highest sequence number accepted; 0 before the first
	used   time.Time // last authenticated datagram (or the grant): idle sessions expire
}

type sessions struct {
	mu        sync.RWMutex
	m         map[[kswire.SessionIDSize]byte]*session
	perClient map[string]int
	max, per  int
}

func (ss *sessions) init(max, per int) {
	ss.m, ss.perClient, ss.max, ss.per = map[[kswire.SessionIDSize]byte]*session{}, map[string]int{}, max, per
}

// add registers a session unless the server or the client is at its session limit, after
// dropping the sessions that expired or stayed idle longer than idle (at now).
func (ss *sessions) add(s *session, id [kswire.SessionIDSize]byte, now time.Time, idle time.Duration) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= ss.max || ss.perClient[s.client] >= ss.per {
		ss.pruneLocked(now, idle)
	}
	if len(ss.m) >= ss.max || ss.perClient[s.client] >= ss.per {
		return false
	}
	ss.m[id] = s
	ss.perClient[s.client]++
	return true
}

func (ss *sessions) get(id [kswire.SessionIDSize]byte) *session {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.m[id]
}

func (ss *sessions) len() int {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return len(ss.m)
}

func (ss *sessions) prune(now time.Time, idle time.Duration) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.pruneLocked(now, idle)
}

// pruneLocked drops sessions past their expiry or idle longer than idle.
func (ss *sessions) pruneLocked(now time.Time, idle time.Duration) {
	for id, s := range ss.m {
		s.mu.Lock()
		dead := now.After(s.expiry) || now.Sub(s.used) > idle
		s.mu.Unlock()
		if dead {
			ss.removeLocked(id, s)
		}
	}
}

func (ss *sessions) removeLocked(id [kswire.SessionIDSize]byte, s *session) {
	delete(ss.m, id)
	if ss.perClient[s.client]--; ss.perClient[s.client] <= 0 {
		delete(ss.perClient, s.client)
	}
}

// close ends the session id of client (a client closing its own session); it reports
// whether there was one.
func (ss *sessions) close(id [kswire.SessionIDSize]byte, client string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil || s.client != client {
		return false
	}
	ss.removeLocked(id, s)
	return true
}

// readUDP is one reader goroutine: it reads, authenticates and answers datagrams until
// the socket is closed. In the delay modes answering waits, so it moves to a goroutine.
func (s *Server) readUDP() {
	defer s.wg.Done()
	buf := make([]byte, s.cfg.MaxDatagram+1)
	var out []byte
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n > s.cfg.MaxDatagram {
			s.m.drops.WithLabelValues("oversized").Inc()
			continue
		}
		sess, d, ok := s.accept(buf[:n])
		if !ok {
			continue
		}
		if s.lim.delays() {
			body := append([]byte(nil), d.Body...)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.answer(nil, sess, d.Session, d.Seq, body, from)
			}()
			continue
		}
		out = s.answer(out[:0], sess, d.Session, d.Seq, d.Body, from)
	}
}

// accept authenticates a datagram and checks its session and sequence number; drops are
// counted by reason.
func (s *Server) accept(b []byte) (*session, *kswire.Datagram, bool) {
	drop := func(reason string) (*session, *kswire.Datagram, bool) {
		s.m.drops.WithLabelValues(reason).Inc()
		return nil, nil, false
	}
	id, err := kswire.PeekSession(b)
	if err != nil {
		return drop("malformed")
	}
	sess := s.sess.get(id)
	if sess == nil {
		return drop("unknown_session")
	}
	if s.cfg.testNow().After(sess.expiry) {
		return drop("expired")
	}
	d, err := kswire.OpenDatagram(b, &sess.key)
	if err != nil {
		if errors.Is(err, kswire.ErrForged) {
			return drop("forged")
		}
		return drop("malformed")
	}
	if d.Type != kswire.TypeRequest {
		return drop("malformed")
	}
	sess.mu.Lock()
	fresh := d.Seq > sess.seq
	if fresh {
		sess.seq = d.Seq
		sess.used = s.cfg.testNow()
	}
	sess.mu.Unlock()
	if !fresh {
		return drop("replay")
	}
	if !s.clientActive(sess.client) {
		return drop("revoked")
	}
	return sess, d, true
}

// answer evaluates one authenticated request and sends the reply (or drops it).
func (s *Server) answer(out []byte, sess *session, id [kswire.SessionIDSize]byte, seq uint64, body []byte, to netip.AddrPort) []byte {
	ctx, cancel := context.WithTimeout(s.reqCtx, s.cfg.ReadTimeout+s.cfg.longestDelay())
	defer cancel()
	resp, e := s.evaluate(ctx, sess.client, "udp", body)
	d := &kswire.Datagram{Type: kswire.TypeResponse, Session: id, Seq: seq, Body: resp}
	if e != nil {
		s.m.requests.WithLabelValues("udp", e.reason).Inc()
		if e.reason == "limiter" {
			s.warnLimiter("udp", sess.client, e.err)
		}
		if e.code == 0 {
			s.m.drops.WithLabelValues(e.reason).Inc()
			return out
		}
		s.m.rejections.WithLabelValues("udp", e.reason).Inc()
		d.Type, d.Body = kswire.TypeError, []byte{e.code}
	} else {
		s.m.requests.WithLabelValues("udp", "ok").Inc()
	}
	out = kswire.AppendDatagram(out, d, &sess.key)
	if _, err := s.udp.WriteToUDPAddrPort(out, to); err != nil {
		s.m.drops.WithLabelValues("send_failed").Inc()
	}
	return out
}
