package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/testutil"
)

// linkCount is how many messages of this kind (announce, query, ping) Server 2 got from
// Server 1 on the link, from its /metrics.
func linkCount(t *testing.T, p *pair, msg string) int {
	t.Helper()
	m := get(t, p.dep, 1, "https://"+p.addr[1]+"/metrics")
	pre := fmt.Sprintf("veil_metal_link_messages_total{message=%q} ", msg)
	for _, l := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(l, pre); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("metrics line %q", l)
			}
			return n
		}
	}
	return 0
}

// flooder is the client address half requests come from in these tests; honest clients'
// come from 127.0.0.1 (the servers count waiting requests per address).
const flooder = "127.0.0.2"

// waitLink waits until Server 1's /metrics says the link is up ("1") or down ("0").
func waitLink(t *testing.T, p *pair, up string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "server 1's link state "+up, func() bool {
		return strings.Contains(get(t, p.dep, 0, "https://"+p.addr[0]+"/metrics"), "\nveil_metal_peer_up "+up)
	})
}

// halfRequests sends n account parts with fresh ids to server i (0: Server 1) only, from
// flooder; the channel gets each one's status.
func halfRequests(t *testing.T, p *pair, i, n int) <-chan int {
	ca := []string{p.dep.CA1, p.dep.CA2}[i]
	hc := httpClientFrom(t, ca, flooder)
	st := make(chan int, n)
	for range n {
		go func() {
			id := make([]byte, idLen)
			rand.Read(id)
			st <- post(hc, p.addr[i], "/v1/account", id)
		}()
	}
	return st
}

// post sends body and returns the status (0 if the request failed).
func post(hc *http.Client, addr, path string, body []byte) int {
	st, _ := postMsg(hc, addr, path, body)
	return st
}

// postMsg is post that also returns the answer's body (or the request's error).
func postMsg(hc *http.Client, addr, path string, body []byte) (int, string) {
	resp, err := hc.Post("https://"+addr+path, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWaitingPartsCostOneQueryPerPoll: however many requests are sent to Server 1 only,
// the link carries one query for those that came together and then one query per poll for
// all that wait. Server 1 used to announce each id on its own and then again (after 5 ms,
// doubling to 0.5 s) until its pair timeout, about ten times each in the 2 s of these tests
// (66 at the default 30 s), so a flood of them slowed every call (review: account creation
// 5.2-6.5 s instead of 0.27 s with 200 such clients on a 10 ms link). Here the n requests
// come while Server 1's first attempt to reach Server 2 hangs (a relay holds it), so they
// are all queued when the link comes up (while Server 2 is known unreachable they are
// answered at once instead); there are 32 of them, as many as one client address may have
// waiting (Config.MaxWaitingPerAddr).
func TestWaitingPartsCostOneQueryPerPoll(t *testing.T) {
	p := startPair(t)
	c := p.client(t)
	waitLink(t, p, "1")
	p.stop[1]()
	waitLink(t, p, "0")
	p.restart(t, 1) // counts from zero
	_, release := viaRelayHeld(t, p, true)
	const n = 32
	p.mu.Lock()
	b0 := len(p.bodies[0])
	p.mu.Unlock()
	half := halfRequests(t, p, 0, n)
	testutil.WaitFor(t, 30*time.Second, "server 1 to read the half requests", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.bodies[0])-b0 == n
	})
	release()
	if _, err := c.CreateAccount(context.Background()); err != nil { // runs while they wait
		t.Fatal(err)
	}
	for range n {
		if st := <-half; st != http.StatusConflict {
			t.Fatalf("a half request got %d, want 409", st)
		}
	}
	// One query for the n, one announcement for the account, and the polls: they follow
	// one backoff for all, 5 ms doubling to 0.5 s over a 2 s pair timeout, 11, whatever n.
	a, q := linkCount(t, p, "announce"), linkCount(t, p, "query")
	t.Logf("%d half requests and an account: %d announcements, %d queries", n, a, q)
	if q < 1 || a+q > 16 {
		t.Fatalf("%d announcements and %d queries for %d half requests and one account, want 1..16 messages with a query", a, q, n)
	}
}

// TestLatePartFoundByQuery: a part reaching Server 2 after Server 1 announced its id is
// found by a later query and the call runs; a late part of another kind makes both refuse
// it (409); the servers stay in step.
func TestLatePartFoundByQuery(t *testing.T) {
	p := startPair(t)
	c := p.client(t)
	late(t, p, "/v1/account", nil, http.StatusOK)
	late(t, p, "/v1/access", make([]byte, ac.RequestLen), http.StatusConflict)
	if q := linkCount(t, p, "query"); q < 2 {
		t.Fatalf("%d queries found the two late parts", q)
	}
	if _, err := c.CreateAccount(context.Background()); err != nil {
		t.Fatalf("after the late parts: %v", err)
	}
}

// late sends an account's part to Server 1, waits for its announcement, then sends Server
// 2 a part with the same id to path (its body after the id: part2) and checks that both
// servers answer want.
func late(t *testing.T, p *pair, path string, part2 []byte, want int) {
	t.Helper()
	id := make([]byte, idLen)
	rand.Read(id)
	a0 := linkCount(t, p, "announce")
	var wg sync.WaitGroup
	var st1 int
	wg.Go(func() { st1 = post(httpClient(t, p.dep.CA1), p.addr[0], "/v1/account", id) })
	testutil.WaitFor(t, 30*time.Second, "the announcement", func() bool { return linkCount(t, p, "announce") > a0 })
	st2 := post(httpClient(t, p.dep.CA2), p.addr[1], path, append(id, part2...))
	wg.Wait()
	if st1 != want || st2 != want {
		t.Fatalf("late part to %s: server 1 %d, server 2 %d, want %d", path, st1, st2, want)
	}
}

// TestVersion1Server2GetsNoQueries: a Server 2 that answers the link upgrade without the
// Veil-Metal-Link header (one older than link version 2) is never sent a query, which it
// would refuse, closing the link: Server 1 announces each waiting id again instead, and a
// late part still runs.
func TestVersion1Server2GetsNoQueries(t *testing.T) {
	p := startPair(t)
	p.srv[1].linkV1.Store(true)
	p.restart(t, 0) // Server 1 dials again
	p.client(t)
	a0 := linkCount(t, p, "announce")
	half := halfRequests(t, p, 0, 2)
	late(t, p, "/v1/account", nil, http.StatusOK)
	for range 2 {
		if st := <-half; st != http.StatusConflict {
			t.Fatalf("a half request got %d, want 409", st)
		}
	}
	if q := linkCount(t, p, "query"); q != 0 {
		t.Fatalf("a version-1 Server 2 got %d queries", q)
	}
	if a := linkCount(t, p, "announce") - a0; a <= 3 {
		t.Fatalf("%d announcements: the waiting ids were not announced again", a)
	}
}
