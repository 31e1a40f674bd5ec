package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// TestServer2AnswersPartNobodyAnnounces: a part sent to Server 2 only is answered 409 once
// it has waited the pair timeout while the link was up with no call running (Server 1
// would have announced its id by then had it got the other part). It was kept for the call
// timeout, 5 minutes, holding its connection.
func TestServer2AnswersPartNobodyAnnounces(t *testing.T) {
	p := startPairWith(t, 0, time.Second)
	waitLink(t, p, "1")
	hc := httpClient(t, p.dep.CA2)
	hc.Timeout = 30 * time.Second
	id := make([]byte, idLen)
	rand.Read(id)
	start := time.Now()
	st, msg := postMsg(hc, p.addr[1], "/v1/account", id)
	took := time.Since(start)
	t.Logf("answered %d after %v: %s", st, took, msg)
	if st != http.StatusConflict || !strings.Contains(msg, "did not announce this request") || took < p.wait {
		t.Fatalf("a part sent to server 2 only: %d after %v: %s", st, took, msg)
	}
}

// TestServer2WithoutLinkAnswersPartNobodyAnnounces: while Server 2 has no link (Server 1
// stopped), a part sent to it alone is answered 409 at its pair timeout too; it waited for
// the call timeout (5 minutes by default, 20 s here), since the pair-timeout clock stood
// still while there was no link. Without a link Server 1 holds nothing it could announce
// later. Once Server 1 is back, calls run.
func TestServer2WithoutLinkAnswersPartNobodyAnnounces(t *testing.T) {
	const pairTimeout, callTimeout = time.Second, 20 * time.Second
	p := startPairParams(t, 0, pairTimeout, testParams, func(c *Config) { c.CallTimeout = callTimeout })
	waitLink(t, p, "1")
	p.stop[0]()
	hc := httpClient(t, p.dep.CA2)
	hc.Timeout = 2 * callTimeout
	defer hc.CloseIdleConnections()
	id := make([]byte, idLen)
	rand.Read(id)
	start := time.Now()
	st, msg := postMsg(hc, p.addr[1], "/v1/account", id)
	took := time.Since(start)
	t.Logf("answered %d after %v: %s", st, took, msg)
	if st != http.StatusConflict || !strings.Contains(msg, "did not announce this request") || took < pairTimeout || took > pairTimeout+3*time.Second {
		t.Fatalf("a part sent to server 2 only, without a link: %d after %v: %s", st, took, msg)
	}
	p.restart(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.client(t).CreateAccount(ctx); err != nil {
		t.Fatalf("an account once server 1 is back: %v", err)
	}
}

// TestPendingClockStopsDuringCalls: the clock a part waits on at Server 2 stands still
// while a call runs (Server 1 may hold its twin in its queue meanwhile) and runs again
// after.
func TestPendingClockStopsDuringCalls(t *testing.T) {
	p := newPending()
	p.run(true)
	j := &job{}
	if err := p.put(j, 1); err != nil {
		t.Fatal(err)
	}
	p.run(false) // a call starts
	l := p.left(j, time.Minute)
	time.Sleep(20 * time.Millisecond)
	if l2 := p.left(j, time.Minute); l2 != l {
		t.Fatalf("the clock ran during a call: %v left, then %v", l, l2)
	}
	p.run(true)
	time.Sleep(20 * time.Millisecond)
	if l2 := p.left(j, time.Minute); l2 > l-20*time.Millisecond {
		t.Fatalf("the clock stood after the call: %v left, then %v", l, l2)
	}
}

// TestHalfFloodLeavesRoomForHonestClients: one address sending each server 100 requests
// that never get their other part, over connections it keeps open, holds 32 of them
// waiting (Config.MaxWaitingPerAddr) and gets the rest refused at once (429, the
// connection closed), so a client from another address still creates an account and
// writes and reads a file while they wait. The servers here take 80 connections: the flood
// used to hold all of them (Server 1's parts until the pair timeout, a minute here, Server
// 2's for the call timeout, 5 minutes) and honest clients could not connect.
func TestHalfFloodLeavesRoomForHonestClients(t *testing.T) {
	const flood, perAddr = 100, 32
	p := startPairParams(t, 0, time.Minute, testParams, func(c *Config) { c.MaxConns = 80 })
	waitLink(t, p, "1")
	var refused [2]chan string
	for i := range refused {
		hc := httpClientFrom(t, []string{p.dep.CA1, p.dep.CA2}[i], flooder)
		hc.Transport.(*http.Transport).MaxIdleConnsPerHost = flood // it keeps every connection it can
		refused[i] = make(chan string, flood)
		for range flood {
			go func() {
				id := make([]byte, idLen)
				rand.Read(id)
				if st, msg := postMsg(hc, p.addr[i], "/v1/account", id); st == http.StatusTooManyRequests {
					refused[i] <- msg
				}
			}()
		}
	}
	for i := range refused {
		for n := 0; n < flood-perAddr; n++ {
			select {
			case msg := <-refused[i]:
				if !strings.Contains(msg, "too many requests from this address") {
					t.Fatalf("server %d refused a request of the flood with %q", i+1, msg)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("server %d refused %d of %d requests of one address in 30 s, want %d", i+1, n, flood, flood-perAddr)
			}
		}
		if w := p.srv[i].wait.total(); w != perAddr {
			t.Fatalf("server %d: %d requests waiting, want %d", i+1, w, perAddr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := p.client(t)
	a, err := c.CreateAccount(ctx)
	if err == nil {
		err = c.Write(ctx, a.Capability, a.First, []byte("honest"))
	}
	var got []byte
	if err == nil {
		got, err = c.Read(ctx, a.Capability, a.First)
	}
	if err != nil || !strings.HasPrefix(string(got), "honest") {
		t.Fatalf("an honest client during the flood: %q, %v", got, err)
	}
	for i := range refused {
		if w := p.srv[i].wait.total(); w > perAddr {
			t.Fatalf("server %d: %d requests waiting after the honest calls, want at most the flood's %d", i+1, w, perAddr)
		}
	}
}

// TestHalvesFromManyAddressesBounded: requests that never get their other part, from more
// addresses than the per-address limit can stop, hold at most half the server's connections
// (Config.MaxConns 32 here: 16) on each server: past that, the one that waited longest is
// answered 409, and a client sending both parts is served meanwhile.
func TestHalvesFromManyAddressesBounded(t *testing.T) {
	const addrs, each, maxHalves = 8, 6, 16
	p := startPairParams(t, 0, time.Minute, testParams, func(c *Config) { c.MaxConns = 2 * maxHalves })
	waitLink(t, p, "1")
	var crowded [2]chan string
	for i := range crowded {
		crowded[i] = make(chan string, addrs*each)
		for a := range addrs {
			hc := httpClientFrom(t, []string{p.dep.CA1, p.dep.CA2}[i], fmt.Sprintf("127.0.0.%d", 2+a))
			hc.Transport.(*http.Transport).MaxIdleConnsPerHost = each
			for range each {
				go func() {
					id := make([]byte, idLen)
					rand.Read(id)
					if st, msg := postMsg(hc, p.addr[i], "/v1/account", id); st == http.StatusConflict {
						crowded[i] <- msg
					}
				}()
			}
		}
	}
	for i := range crowded {
		for n := 0; n < addrs*each-maxHalves; n++ {
			select {
			case msg := <-crowded[i]:
				if !strings.Contains(msg, "had waited longest (try again)") {
					t.Fatalf("server %d answered a waiting request %q", i+1, msg)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("server %d answered %d of %d waiting requests in 30 s, want %d", i+1, n, addrs*each, addrs*each-maxHalves)
			}
		}
	}
	for i := range crowded {
		if w := p.srv[i].wait.total(); w != maxHalves {
			t.Fatalf("server %d: %d requests waiting, want %d", i+1, w, maxHalves)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.client(t).CreateAccount(ctx); err != nil {
		t.Fatalf("an honest client while %d requests wait for their other part: %v", 2*maxHalves, err)
	}
}

// TestHonestBurstRefusalSaysTryAgain: the bound on parts waiting for their other part
// (half of Config.MaxConns) also meets honest clients, with no flood: here 5 clients each
// send Server 2 its part a moment before Server 1 its own, at servers taking 8 connections
// (bound 4), and Server 2 refuses the one that waited longest. Its answer tells the client
// to try again; it said "send both parts, same id", which this client did (found by
// review).
func TestHonestBurstRefusalSaysTryAgain(t *testing.T) {
	p := startPairParams(t, 0, 10*time.Second, testParams, func(c *Config) { c.MaxConns = 8 })
	waitLink(t, p, "1")
	hc := [2]*http.Client{httpClient(t, p.dep.CA1), httpClient(t, p.dep.CA2)}
	const n = 5
	type answer struct {
		st  int
		msg string
	}
	var got [n][2]answer
	ids := make([][]byte, n)
	var wg sync.WaitGroup
	send := func(i, srv int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i][srv].st, got[i][srv].msg = postMsg(hc[srv], p.addr[srv], "/v1/account", ids[i])
		}()
	}
	for i := range ids {
		ids[i] = make([]byte, idLen)
		rand.Read(ids[i])
		send(i, 1)
	}
	testutil.WaitFor(t, 10*time.Second, "server 2 holding 4 parts", func() bool {
		p.srv[1].pend.mu.Lock()
		defer p.srv[1].pend.mu.Unlock()
		return len(p.srv[1].pend.m) == 4 && p.srv[1].wait.total() == 4
	})
	for i := range ids {
		send(i, 0)
	}
	wg.Wait()
	refused := 0
	for i, g := range got {
		if g[1].st == http.StatusOK {
			continue
		}
		refused++
		if g[1].st != http.StatusConflict || !strings.Contains(g[1].msg, "try again") || strings.Contains(g[1].msg, "send both parts") {
			t.Errorf("request %d refused by server 2: %d %q, want 409 saying to try again", i, g[1].st, g[1].msg)
		}
	}
	if refused != 1 {
		t.Errorf("%d requests refused, want the one that waited longest: %+v", refused, got)
	}
}
