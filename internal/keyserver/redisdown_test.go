package keyserver

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/testutil"
)

// Redis going away under a running key server: an evaluation it cannot charge is refused
// with 503 and a warning in the server's JSON log saying why, and go-redis's own lines go
// to that log (debug) instead of stderr as plain text. Found deploying: the log had
// nothing but go-redis's "redis: 2026/.. pool.go:770: ..." lines, which also came before
// 'keyserver serve's one-line error when Redis was down at start.
func TestRedisDownIsLogged(t *testing.T) {
	redisURL, redis := testutil.StartRedisProc(t)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, addr, _, alice := handlerServer(t, Config{RateLimitStore: redisURL, Logger: log})
	redis.Kill()
	<-redis.Done()
	_, req := blindRequest(t, alice, alice.Current.ID(), []byte("x"))
	hc := httpsClient(alice, true)
	post(t, hc, "https://"+addr+"/healthz", nil) // the TLS handshake, outside the timing
	start := time.Now()
	code, body, _ := post(t, hc, "https://"+addr+"/v1/evaluate", req)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("evaluation with Redis gone: %d %s, want 503", code, body)
	}
	// Within the client's timeout (ksclient: 2 s an attempt), so that it moves on to
	// another replica or stores at once, instead of waiting out three timeouts: go-redis's
	// default retries (3, of 5 dials each) took about 2 s.
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the refusal took %v", d)
	}
	if strings.Contains(string(body), strings.TrimSuffix(strings.TrimPrefix(redisURL, "redis://"), "/0")) || !strings.Contains(string(body), "rate-limit store does not answer") {
		t.Fatalf("the refusal tells the client %q (Redis's address is the server's business)", body)
	}
	out := logs.String()
	if !strings.Contains(out, `"level":"WARN","msg":"evaluation refused"`) || !strings.Contains(out, "rate-limit store") {
		t.Fatalf("no warning names the rate-limit store:\n%s", out)
	}
	if !strings.Contains(out, `"level":"DEBUG"`) || !strings.Contains(out, "connection pool") {
		t.Fatalf("go-redis's own lines are not in the server's log:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Over UDP an evaluation refused because Redis is down is a drop (the client sees no
// answer), and it is logged as over HTTPS, at most one line per interval, which
// counts the refusals left unlogged before it. Session 16's walkthrough: UDP refusals
// left no line at all.
func TestRedisDownUDPIsLoggedRateLimited(t *testing.T) {
	redisURL, redis := testutil.StartRedisProc(t)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, addr, udpAddr, alice := handlerServer(t, Config{RateLimitStore: redisURL, Logger: log})
	s.limWarn.SetEvery(time.Hour)
	code, body, _ := post(t, httpsClient(alice, true), "https://"+addr+"/v1/session", nil)
	g, err := kswire.ParseGrant(body)
	if code != http.StatusOK || err != nil {
		t.Fatalf("session: %d %v", code, err)
	}
	redis.Kill()
	<-redis.Done()
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, req := blindRequest(t, alice, alice.Current.ID(), []byte("x"))
	send := func(from, to uint64) {
		t.Helper()
		for seq := from; seq <= to; seq++ {
			pkt := kswire.AppendDatagram(nil, &kswire.Datagram{Type: kswire.TypeRequest, Session: g.ID, Seq: seq, Body: req}, &g.MACKey)
			if _, err := conn.Write(pkt); err != nil {
				t.Fatal(err)
			}
		}
		series := `veil_ks_udp_drops_total{reason="limiter"}`
		testutil.WaitFor(t, 30*time.Second, series+" = "+strconv.FormatUint(to, 10), func() bool {
			return metric(t, alice, addr, series) == strconv.FormatUint(to, 10)
		})
	}
	warnings := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"msg":"evaluation refused"`) {
				out = append(out, l)
			}
		}
		return out
	}
	send(1, 5)
	w := warnings()
	if len(w) != 1 || !strings.Contains(w[0], `"level":"WARN"`) || !strings.Contains(w[0], `"transport":"udp"`) ||
		!strings.Contains(w[0], "rate-limit store") || !strings.Contains(w[0], `"unlogged_before":0`) {
		t.Fatalf("5 UDP refusals with Redis down logged as:\n%s", strings.Join(w, "\n"))
	}
	s.limWarn.SetEvery(time.Nanosecond) // the interval has passed
	time.Sleep(time.Millisecond)
	send(6, 6)
	s.limWarn.SetEvery(time.Hour)
	send(7, 7)
	if w = warnings(); len(w) != 2 || !strings.Contains(w[1], `"unlogged_before":4`) {
		t.Fatalf("after the interval, 2 more refusals logged as:\n%s", strings.Join(w, "\n"))
	}
}
