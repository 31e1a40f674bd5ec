package keyserver

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// Redis going away under a running key server: an evaluation it cannot charge is refused
// with 503 and a warning in the server's JSON log saying why, and go-redis's own lines go
// to that log (debug) instead of stderr as plain text. Found deploying: the log had
// nothing but go-redis's "redis: 2026/.. pool.go:770: ..." lines, which also came before
// 'keyserver serve's one-line error when Redis was down at start.
func TestRedisDownIsLogged(t *testing.T) {
	bin := testutil.RequireBinary(t, "redis-server")
	port := testutil.FreePort(t)
	redis := testutil.Start(t, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir())
	testutil.WaitTCP(t, testutil.Addr(port), 10*time.Second)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, addr, _, alice := handlerServer(t, Config{RateLimitStore: "redis://" + testutil.Addr(port) + "/0", Logger: log})
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
	if strings.Contains(string(body), testutil.Addr(port)) || !strings.Contains(string(body), "rate-limit store does not answer") {
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
