package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Pairing on Server 2 and the link's pairing messages (docs/formats/metal-server.md "The
// 2PC link"): an announcement `kind ∥ id (16)`, a query `'Q' ∥ (kind ∥ id (16))×n`, and
// Server 2's answer, one byte per id.

const (
	kindQuery = 'Q' // Server 1's question about all its waiting jobs at once (link version 2)

	// linkHeader, in Server 2's 101 answer to the link upgrade, is the link version it
	// speaks; version 2 takes queries. A version-1 Server 2 sends no such header.
	linkHeader  = "Veil-Metal-Link"
	linkVersion = "2"
)

// Server 2's answers, one byte per announced id.
const (
	answerSkip   = 0 // a part with this id, but of another kind: the call is skipped
	answerRun    = 1 // the part is here: both run the call
	answerNotYet = 2 // no part with this id (yet): Server 1 asks again later
)

// announce is one id Server 1 asks about, with the kind of its call.
type announce struct {
	kind byte
	id   [idLen]byte
}

func (a announce) marshal() []byte { return append([]byte{a.kind}, a.id[:]...) }

func marshalQuery(as []announce) []byte {
	b := make([]byte, 1, 1+len(as)*(1+idLen))
	b[0] = kindQuery
	for _, a := range as {
		b = append(b, a.marshal()...)
	}
	return b
}

// parseAsk parses Server 1's announcement or query (not a ping).
func parseAsk(msg []byte) ([]announce, error) {
	one := 1 + idLen
	body := msg
	if len(msg) > 0 && msg[0] == kindQuery {
		body = msg[1:]
		if len(body) == 0 || len(body)%one != 0 {
			return nil, fmt.Errorf("bad query from server 1: %d bytes after 'Q', want a positive multiple of %d", len(body), one)
		}
	} else if len(msg) != one {
		return nil, fmt.Errorf("bad announcement from server 1: %d bytes, want %d", len(msg), one)
	}
	as := make([]announce, len(body)/one)
	for i := range as {
		e := body[i*one : (i+1)*one]
		if kindNames[e[0]] == "" {
			return nil, fmt.Errorf("bad announcement from server 1: unknown call kind 0x%02x", e[0])
		}
		as[i].kind = e[0]
		copy(as[i].id[:], e[1:])
	}
	return as, nil
}

// checkAnswers checks Server 2's answer to n ids.
func checkAnswers(b []byte, n int) error {
	if len(b) != n {
		return fmt.Errorf("bad answer from server 2: %d bytes for %d ids", len(b), n)
	}
	for _, a := range b {
		if a > answerNotYet {
			return fmt.Errorf("bad answer from server 2: 0x%02x", a)
		}
	}
	return nil
}

// follow is Server 2's loop: say at once, for each id Server 1 asks about, whether its part
// is here, then run the calls of those that are, in order.
func (s *Server) follow(ctx context.Context, sess *twopc.Session, p *access.Party) error {
	for {
		msg, err := sess.ReceiveMessage()
		if err != nil {
			return err
		}
		if len(msg) == 1 && msg[0] == kindPing {
			s.m.linkMsgs.WithLabelValues("ping").Inc()
			if err := sess.SendMessage(msg); err != nil {
				return err
			}
			continue
		}
		as, err := parseAsk(msg)
		if err != nil {
			return err
		}
		if msg[0] == kindQuery {
			s.m.linkMsgs.WithLabelValues("query").Inc()
		} else {
			s.m.linkMsgs.WithLabelValues("announce").Inc()
		}
		answers := make([]byte, len(as))
		var run []*job
		for i, a := range as {
			j := s.pend.take(a.id)
			switch {
			case j == nil:
				answers[i] = answerNotYet
			case j.kind != a.kind:
				j.done <- result{err: errMissing}
				answers[i] = answerSkip
			default:
				answers[i] = answerRun
				run = append(run, j)
			}
		}
		if err := sess.SendMessage(answers); err != nil {
			for _, j := range run {
				j.done <- result{err: s.stopping(ctx, err)}
			}
			return err
		}
		if len(run) > 0 { // Server 1 may hold parts' twins in its queue meanwhile
			s.pend.run(false)
			err := s.runAll(ctx, p, run)
			s.pend.run(true)
			if err != nil {
				return err
			}
		}
	}
}

var errMissing = errors.New("server 2 did not receive its part of this request (send both parts, same id)")
