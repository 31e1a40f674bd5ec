package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/twopc"
)

// TestNewJobsDoNotHoldBackPolls: Server 1's loop against a scripted Server 2 (a real twopc
// session over a pipe, answering every id "not yet" after 20 ms): while new jobs keep
// coming (one every 50 ms, each asked about in its own round trip), the job waiting from
// the start is still asked about again, in polls at least 10 round trips apart. If asking
// about new jobs set the pause before the next poll, no poll would come while they did.
func TestNewJobsDoNotHoldBackPolls(t *testing.T) {
	c1, c2 := tcpPair(t)
	s := &Server{cfg: Config{PairTimeout: time.Minute, PingInterval: time.Hour}, jobs: make(chan *job), m: newMetrics()}
	s.cfg.defaults()
	var first [idLen]byte
	var mu sync.Mutex
	var polls []time.Time // the queries asking about the first job
	peer := make(chan error, 1)
	go func() {
		sess, err := twopc.NewSession(c2, twopc.Evaluator, rand.Reader)
		for err == nil {
			var msg []byte
			if msg, err = sess.ReceiveMessage(); err != nil {
				break
			}
			var as []announce
			if as, err = parseAsk(msg); err != nil {
				break
			}
			mu.Lock()
			if msg[0] == kindQuery && bytes.Contains(msg, first[:]) {
				polls = append(polls, time.Now())
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			err = sess.SendMessage(bytes.Repeat([]byte{answerNotYet}, len(as)))
		}
		peer <- err
	}()
	sess, err := twopc.NewSession(c1, twopc.Garbler, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	led := make(chan error, 1)
	go func() { led <- s.lead(ctx, sess, nil, true) }()
	jobs := 0
	submit := func() {
		j := &job{kind: kindAccount, ctx: ctx, done: make(chan result, 1)}
		rand.Read(j.id[:])
		if jobs == 0 {
			mu.Lock()
			first = j.id
			mu.Unlock()
		}
		jobs++
		s.jobs <- j
	}
	submit()
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		submit()
	}
	cancel()
	<-led
	c1.Close()
	<-peer
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d jobs; the first asked about again %d times", jobs, len(polls))
	if len(polls) < 2 {
		t.Fatalf("the first job was asked about again %d times in 1.5 s while new jobs came", len(polls))
	}
	for i := 1; i < len(polls); i++ {
		if d := polls[i].Sub(polls[i-1]); d < 150*time.Millisecond {
			t.Fatalf("two polls %v apart on a link of 20 ms round trips", d)
		}
	}
}

// tcpPair returns the two ends of a loopback TCP connection (Server 1's link and the
// scripted Server 2's), closed with the test.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ln.Accept()
	if err != nil {
		c1.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c1.Close(); c2.Close() })
	return c1, c2
}
