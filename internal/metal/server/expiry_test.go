package server

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWaitingJobAnsweredAtItsPairTimeout: Server 1's waiting set wakes at a job's pair
// timeout even when the next poll would come later (the gap between polls on a slow link,
// up to retryMax), and keeps a job waiting until then even when its next ask would come
// after it. The 409 used to come at the first poll after the pair timeout (up to 0.5 s
// late), or, when the next ask would be past it, at once (up to 0.5 s early).
func TestWaitingJobAnsweredAtItsPairTimeout(t *testing.T) {
	t0 := time.Now()
	until := t0.Add(time.Second)
	d := &deferred{j: &job{done: make(chan result, 1)}, until: until, next: t0, pause: retryMax}
	w := &waiting{query: true, gap: retryMax, lastEnd: until.Add(-200 * time.Millisecond), jobs: []*deferred{d}}
	w.take()
	if !w.again(d, until.Add(-100*time.Millisecond)) {
		t.Fatal("a job answered 100 ms before its pair timeout because its next ask would come after it")
	}
	if at, _ := w.due(); at.After(until) {
		t.Fatalf("the loop wakes %v after the job's pair timeout", at.Sub(until))
	}
	w.expire(until.Add(-time.Millisecond))
	if len(d.j.done) != 0 {
		t.Fatal("answered before its pair timeout")
	}
	w.expire(until)
	if len(w.jobs) != 0 || len(d.j.done) != 1 {
		t.Fatal("not answered at its pair timeout")
	}
	if res := <-d.j.done; res.err != errMissing {
		t.Fatalf("answered %v", res.err)
	}
	if w.again(&deferred{j: d.j, until: until, pause: retryFirst}, until) {
		t.Fatal("a job whose answer came at its pair timeout kept waiting")
	}
}

// TestHalfRequestAnsweredAfterPairTimeout: a request sent to Server 1 only is refused no
// sooner than the pair timeout after it was sent (it was refused about 0.36 s early with a
// 2 s pair timeout: the backoff's next ask would have come after it) and soon after.
func TestHalfRequestAnsweredAfterPairTimeout(t *testing.T) {
	p := startPair(t)
	waitLink(t, p, "1")
	id := make([]byte, idLen)
	rand.Read(id)
	start := time.Now()
	st, msg := postMsg(httpClient(t, p.dep.CA1), p.addr[0], "/v1/account", id)
	took := time.Since(start)
	t.Logf("answered %d after %v (pair timeout %v)", st, took, p.wait)
	if st != http.StatusConflict || !strings.Contains(msg, "did not receive its part") {
		t.Fatalf("a half request: %d %s", st, msg)
	}
	if took < p.wait || took > p.wait+5*time.Second {
		t.Fatalf("a half request refused after %v, want its pair timeout, %v", took, p.wait)
	}
}

// TestTrimDropsGoneClientsFirst: when more jobs wait for their other part than allowed,
// one whose client has gone (it holds no connection) is dropped before the live job that
// waited longest.
func TestTrimDropsGoneClientsFirst(t *testing.T) {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	w := &waiting{}
	for i, ctx := range []context.Context{context.Background(), gone, context.Background()} {
		w.jobs = append(w.jobs, &deferred{j: &job{ctx: ctx, done: make(chan result, 1)}, until: t0.Add(time.Duration(i) * time.Second)})
	}
	oldest, dead := w.jobs[0], w.jobs[1]
	w.trim(2)
	if len(w.jobs) != 2 || len(oldest.j.done) != 0 || len(dead.j.done) != 1 {
		t.Fatalf("trim to 2 of 3 with one client gone: %d left, oldest answered %v, gone one answered %v", len(w.jobs), len(oldest.j.done) == 1, len(dead.j.done) == 1)
	}
	w.trim(1)
	if res := <-oldest.j.done; len(w.jobs) != 1 || !errors.Is(res.err, errMissing) || !strings.Contains(res.err.Error(), "waited longest") {
		t.Fatalf("trim to 1: %d left, oldest answered %v", len(w.jobs), res.err)
	}
}
