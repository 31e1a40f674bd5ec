package keyserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/veil-project/veil/internal/testutil"
)

// Two admissions race across an epoch boundary: one computed its epoch (E) just before the
// boundary but reaches the store after one of epoch E+1 (the store's mutex is held across a
// reservation's fsync, or the wall clock stepped back). The late request of the old epoch
// must not wipe the new epoch's count: the client would get the new epoch's budget twice.
func TestBoltLateRequestKeepsNewerEpochCount(t *testing.T) {
	s, err := openBoltStore(filepath.Join(t.TempDir(), "rl.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const q = 10
	if ok, err := s.Take(ctx, "a", 2, q, q); !ok || err != nil { // epoch 2: the whole budget
		t.Fatal(ok, err)
	}
	s.Take(ctx, "a", 1, 1, q) // a request of epoch 1 that reached the store late
	if ok, err := s.Take(ctx, "a", 2, q, q); ok || err != nil {
		t.Fatalf("epoch 2's budget of %d was granted a second time (%v, %v) after a late epoch-1 request", q, ok, err)
	}
}

// A RateLimit with its mode left zero is the bounded mode (RateLimit's doc); the q and
// epoch it does set must be kept, not replaced by the default 825,000 per week.
func TestZeroModeKeepsConfiguredBudget(t *testing.T) {
	_, addr, _, alice := handlerServer(t, Config{RateLimit: RateLimit{Q: 2, Epoch: time.Hour}})
	url := "https://" + addr + "/v1/evaluate"
	hc := httpsClient(alice, true)
	for i := range 3 {
		_, req := blindRequest(t, alice, alice.Current.ID(), []byte{byte(i)})
		code, body, _ := post(t, hc, url, req)
		if i < 2 && code != http.StatusOK {
			t.Fatalf("query %d within q=2: %d %s", i, code, body)
		}
		if i == 2 && code != http.StatusTooManyRequests {
			t.Fatalf("third query with q=2 per hour: %d, want 429 (the configured q was dropped)", code)
		}
	}
}

// The Redis count of an epoch must live until the epoch ends, whatever its length: a
// count that expires first hands the client a fresh budget inside the same epoch.
func TestRedisCountOutlivesItsEpoch(t *testing.T) {
	url := testutil.StartRedis(t)
	ctx := context.Background()
	rl := RateLimit{Mode: ModeBounded, Q: 5, Epoch: 90 * 24 * time.Hour}
	epochStart := time.Unix(0, 20*int64(rl.Epoch)) // the first instant of epoch 20
	now := epochStart.Add(time.Second)
	s, _, _, _ := handlerServer(t, Config{RateLimit: rl, RateLimitStore: url, testNow: func() time.Time { return now }})
	l := s.lim
	if _, err := l.admit(ctx, "alice", 5); err != nil {
		t.Fatal(err)
	}
	key := "veil:ks:count:alice:" + strconv.FormatInt(l.epoch(), 10)
	c := redis.NewClient(mustParseURL(t, url))
	defer c.Close()
	ttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if left := epochStart.Add(rl.Epoch).Sub(now); ttl < left {
		t.Fatalf("the epoch's count expires in %v, %v before its epoch ends: the client's spent budget comes back", ttl, left-ttl)
	}
}

func mustParseURL(t *testing.T, url string) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A max datagram that passes the generic minimum but cannot carry one element of the
// ring's suite (ristretto255: 58 + 12 + 32 bytes, 64 more for the answer's proof) would
// grant UDP sessions in which no request is ever answered (every datagram "oversized"):
// the client times out and stores under random keys. Open must refuse it.
func TestOpenRefusesDatagramTooSmallForOneElement(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir, Config{MaxDatagram: 100})
	if err == nil {
		s.Close()
		t.Fatal("max datagram of 100 bytes accepted for ristretto255 (a one-element request is 102 bytes)")
	}
}

// A Redis URL may carry the password (redis://:secret@host:port/db); Open's error (printed
// by 'veil keyserver serve', logged by supervisors) must not repeat it.
func TestRedisErrorHidesPassword(t *testing.T) {
	for _, url := range []string{"redis://:s3cret-pw@127.0.0.1:1/0", "redis://user:s3cret-pw@127.0.0.1:1/notadb"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := openRedisStore(ctx, url, nil)
		cancel()
		if err == nil {
			t.Fatalf("%s: connected", url)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Fatalf("the error repeats the Redis password: %v", err)
		}
	}
}

// In a delay mode a client that gives up during its t_D (its timeout t_R, 2 s by default,
// is often below n*t_D) is not a rate-limit store failure: it must not be counted (and
// alerted on) as reason "limiter", which means Redis or bbolt failed.
func TestClientGivingUpIsNotAStoreFailure(t *testing.T) {
	_, addr, _, alice := handlerServer(t, Config{RateLimit: RateLimit{Mode: ModeFixed, Delay: 3 * time.Second}})
	_, req := blindRequest(t, alice, alice.Current.ID(), []byte("x"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+"/v1/evaluate", bytes.NewReader(req))
	start := time.Now()
	if resp, err := httpsClient(alice, true).Do(hreq); err == nil {
		took := time.Since(start)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The client gives up by closing its connection at its deadline; the server's 503
		// to that can reach Do before Do returns the deadline's error (seen under load:
		// 503 "context canceled" after 305-319 ms). Any other answer came before t_D.
		if resp.StatusCode != http.StatusServiceUnavailable || took < 300*time.Millisecond {
			t.Fatalf("answered before t_D, after %v: %s %q", took, resp.Status, b)
		}
	}
	var limiter, cancelled string
	testutil.WaitFor(t, 20*time.Second, "the abandoned query's rejection on /metrics", func() bool {
		limiter = metric(t, alice, addr, `veil_ks_rejections_total{reason="limiter",transport="https"}`)
		cancelled = metric(t, alice, addr, `veil_ks_rejections_total{reason="cancelled",transport="https"}`)
		return limiter != "" || cancelled != ""
	})
	if limiter != "" {
		t.Fatalf("a client giving up was counted as a rate-limit store failure (limiter=%s)", limiter)
	}
}
