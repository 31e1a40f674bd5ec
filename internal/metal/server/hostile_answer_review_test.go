package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/twopc"
)

// A Server 2 answering Server 1's query with the wrong number of bytes, or a byte above
// 0x02, ends the link: no call runs (Server 1's Party is nil here, so one would panic), and
// every job asked about gets the error, none waits for its pair timeout. Review of link
// version 2 (session 14).
func TestHostileQueryAnswerEndsLink(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(n int) []byte
		want   string
	}{
		{"one byte too many", func(n int) []byte { return bytes.Repeat([]byte{answerRun}, n+1) }, "bytes for"},
		{"one byte short", func(n int) []byte { return bytes.Repeat([]byte{answerRun}, n-1) }, "bytes for"},
		{"an answer 0x03", func(n int) []byte { return append(bytes.Repeat([]byte{answerRun}, n-1), 3) }, "0x03"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c1, c2 := tcpPair(t)
			s := &Server{cfg: Config{PairTimeout: time.Minute, PingInterval: time.Hour}, jobs: make(chan *job, 8), m: newMetrics()}
			s.cfg.defaults()
			var jobs []*job
			for range 3 { // queued before the loop starts: asked about in one query
				j := &job{kind: kindAccount, ctx: context.Background(), done: make(chan result, 1)}
				rand.Read(j.id[:])
				jobs = append(jobs, j)
				s.jobs <- j
			}
			asked := make(chan int, 1)
			go func() {
				sess, err := twopc.NewSession(c2, twopc.Evaluator, rand.Reader)
				if err != nil {
					return
				}
				msg, err := sess.ReceiveMessage()
				if err != nil {
					return
				}
				as, err := parseAsk(msg)
				if err != nil || msg[0] != kindQuery {
					asked <- -1
					return
				}
				asked <- len(as)
				sess.SendMessage(c.answer(len(as)))
				sess.ReceiveMessage() // until Server 1 closes the link
			}()
			sess, err := twopc.NewSession(c1, twopc.Garbler, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			led := make(chan error, 1)
			go func() { led <- s.lead(context.Background(), sess, nil, true) }()
			if n := <-asked; n != len(jobs) {
				t.Fatalf("Server 2 was asked about %d ids in a query, want %d", n, len(jobs))
			}
			select {
			case err := <-led:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("the loop ended with %v, want an error with %q", err, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the loop goes on after a bad answer")
			}
			for i, j := range jobs {
				select {
				case r := <-j.done:
					if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
						t.Fatalf("job %d: %v, want the link's error", i, r.err)
					}
				default:
					t.Fatalf("job %d has no result after the link ended", i)
				}
			}
		})
	}
}
