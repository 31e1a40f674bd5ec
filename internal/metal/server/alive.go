package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// The liveness probe (docs/design-metal.md "When the other server is gone"; wire:
// docs/formats/metal-server.md "Liveness probe"). In a call one server may compute for a
// long time while the other waits (at 2^20 files a fetch keeps Server 2 busy for seconds,
// at 64 KiB blocks for tens of seconds), so the 2PC link itself cannot tell a silent
// Server 2 (a stopped process, a cut network: no TCP reset) from a busy one before the
// call timeout, and every request waited behind such a call that long. So Server 1 opens
// a second connection beside each link, on which Server 2 echoes at once, from a goroutine
// of its own, every byte Server 1 sends: a busy Server 2 echoes, a silent one does not.
// Server 1 sends one byte every probe interval; no echo within the silence timeout cuts
// the link, whatever it is doing: the call fails with one line naming Server 2 as silent,
// and the requests queued behind it are answered at once (503, retried by the client)
// while Server 1 redials.

const (
	aliveProto = "veil-metal-alive"
	aliveByte  = 'K'
	// aliveIdle: Server 2 closes a probe on which nothing came for this long (a Server 1
	// that vanished); Server 1 sends at least once a second.
	aliveIdle = time.Minute
)

// aliveResponse is Server 2's answer to the probe's upgrade.
const aliveResponse = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: " + aliveProto + "\r\nConnection: Upgrade\r\n\r\n"

// silentPeer is the failure of a link the probe cut.
type silentPeer struct{ error }

// handleAlive is Server 2's end of the probe: echo every byte at once.
func (s *Server) handleAlive(w http.ResponseWriter, r *http.Request) {
	if s.noLive.Load() {
		http.NotFound(w, r)
		return
	}
	c, rw, ok := upgradeFromServer1(w, r, aliveProto, aliveResponse)
	if !ok {
		return
	}
	defer c.Close()
	done := make(chan struct{})
	defer close(done)
	go func() { // hijacked connections are not closed by the HTTP server's shutdown
		select {
		case <-s.quit:
			c.Close()
		case <-done:
		}
	}()
	b := make([]byte, 64)
	for {
		c.SetDeadline(time.Now().Add(aliveIdle))
		n, err := rw.Read(b)
		if n > 0 {
			if _, werr := c.Write(b[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// watch runs the probe beside Server 1's link c until the function it returns is called.
func (s *Server) watch(ctx context.Context, c *conn) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.probe(ctx, c)
	}()
	return func() {
		cancel()
		<-done
	}
}

// probe opens the probe and sends aliveByte every probe interval (a quarter of the
// silence timeout, at most 1 s); an echo not back within the silence timeout cuts c. A
// Server 2 without the probe (an older veil, 404) leaves c as it was: a silent Server 2 is
// then noticed at the pair or call timeout, as before. So does a probe that cannot be
// opened: a Server 2 whose connections are all taken must not lose a working link.
func (s *Server) probe(ctx context.Context, c *conn) {
	r := s.cfg.SilenceTimeout
	dctx, cancel := context.WithTimeout(ctx, r)
	pc, br, _, err := s.dialUpgrade(dctx, "/v1/peer/alive", aliveProto, r)
	cancel()
	if err != nil {
		var ru *refusedUpgrade
		switch {
		case ctx.Err() != nil:
		case errors.As(err, &ru):
			s.log.Info("server 2 has no liveness probe (an older veil): a silent server 2 in a call is noticed at the call timeout", "answer", ru.status)
		default:
			s.log.Warn("liveness probe not opened: a silent server 2 in a call is noticed at the call timeout", "err", err)
		}
		return
	}
	defer pc.Close()
	defer context.AfterFunc(ctx, func() { pc.Close() })()
	every := min(time.Second, r/4)
	b := []byte{aliveByte}
	for {
		pc.SetDeadline(time.Now().Add(r))
		_, err := pc.Write(b)
		if err == nil {
			_, err = io.ReadFull(br, b)
		}
		if err == nil && b[0] != aliveByte {
			err = fmt.Errorf("bad liveness echo from server 2: %#02x", b[0])
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.log.Warn("server 2 went silent: cutting the 2PC link", "silence timeout", r)
			c.cut(silentPeer{fmt.Errorf("metal server 2 went silent (no answer to the liveness probe within %v: its process stopped, or the network between the servers is cut): link closed", r)})
			return
		}
		if err != nil { // the probe broke, not the link: the link's own deadlines still hold
			s.log.Warn("liveness probe lost: a silent server 2 in a call is noticed at the call timeout", "err", err)
			return
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
