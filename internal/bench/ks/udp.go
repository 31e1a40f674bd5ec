package ksbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/veil-project/veil/internal/kswire"
)

type udpSess struct {
	g    *kswire.Grant
	conn *net.UDPConn
}

func (r *runner) openSession() (*udpSess, error) {
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: r.tls}, Timeout: 5 * time.Second}
	resp, err := hc.Post(strings.TrimSuffix(r.o.URL, "/")+"/v1/session", "application/octet-stream", bytes.NewReader(nil))
	if err != nil {
		return nil, fmt.Errorf("open udp session: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("open udp session: http %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	g, err := kswire.ParseGrant(b)
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", r.o.UDPAddr)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, err
	}
	c.SetReadBuffer(8 << 20)
	c.SetWriteBuffer(8 << 20)
	return &udpSess{g, c}, nil
}

func (s *udpSess) packet(buf []byte, seq uint64, body []byte) []byte {
	return kswire.AppendDatagram(buf[:0], &kswire.Datagram{Type: kswire.TypeRequest, Session: s.g.ID, Seq: seq, Body: body}, &s.g.MACKey)
}

// runUDPClosed: each worker has its own session and one request outstanding.
func (r *runner) runUDPClosed(ctx context.Context) error {
	var wg sync.WaitGroup
	errc := make(chan error, r.o.Concurrency)
	for w := range r.o.Concurrency {
		s, err := r.openSession()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.conn.Close()
			var lat []time.Duration
			var sent, ok, errs, drops int64
			out, in := make([]byte, 0, 64<<10), make([]byte, 64<<10)
			for seq := uint64(1); ctx.Err() == nil; seq++ {
				p := &r.reqs[(w+int(seq))%len(r.reqs)]
				t0 := time.Now()
				if _, err := s.conn.Write(s.packet(out, seq, p.body)); err != nil {
					errc <- err
					return
				}
				sent++
				s.conn.SetReadDeadline(t0.Add(r.o.Timeout))
				for {
					n, err := s.conn.Read(in)
					if err != nil {
						drops++
						break
					}
					d, err := kswire.OpenDatagram(in[:n], &s.g.MACKey)
					if err != nil || d.Seq != seq {
						continue // a late answer to an earlier request
					}
					if d.Type != kswire.TypeResponse || r.check(p, d.Body) != nil {
						errs++
					} else {
						ok++
						lat = append(lat, time.Since(t0))
					}
					break
				}
			}
			r.record(lat, sent, ok, errs, drops)
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// runUDPRate sends Rate requests per second on one session, regardless of answers (the
// paper's Fig. 4 experiment), and counts the unanswered ones as drops.
func (r *runner) runUDPRate(ctx context.Context) error {
	s, err := r.openSession()
	if err != nil {
		return err
	}
	defer s.conn.Close()
	total := int(float64(r.o.Rate)*r.o.Duration.Seconds()) + 1
	sentAt := make([]atomic.Int64, total+1)
	var ok, errs int64
	var lat []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		in := make([]byte, 64<<10)
		for {
			n, err := s.conn.Read(in)
			if err != nil {
				return
			}
			d, err := kswire.OpenDatagram(in[:n], &s.g.MACKey)
			if err != nil || d.Seq == 0 || d.Seq > uint64(total) {
				continue
			}
			t0 := sentAt[d.Seq].Swap(0)
			if t0 == 0 {
				continue
			}
			if d.Type != kswire.TypeResponse || r.check(&r.reqs[int(d.Seq)%len(r.reqs)], d.Body) != nil {
				errs++
				continue
			}
			ok++
			lat = append(lat, time.Duration(time.Now().UnixNano()-t0))
		}
	}()
	out := make([]byte, 0, 64<<10)
	start := time.Now()
	seq := 0
	for seq < total && ctx.Err() == nil {
		due := int(time.Since(start).Seconds()*float64(r.o.Rate)) + 1
		for ; seq < min(due, total); seq++ {
			p := &r.reqs[(seq+1)%len(r.reqs)]
			sentAt[seq+1].Store(time.Now().UnixNano())
			s.conn.Write(s.packet(out, uint64(seq+1), p.body))
		}
		time.Sleep(500 * time.Microsecond)
	}
	r.span = time.Since(start)
	time.Sleep(r.o.Timeout) // stragglers
	s.conn.Close()
	<-done
	r.record(lat, int64(seq), ok, errs, int64(seq)-ok-errs)
	return nil
}
