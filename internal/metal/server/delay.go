package server

import (
	"io"
	"sync"
	"time"
)

// delayWriter delivers every write d after it was made, in order, without slowing the
// writer down: a one-way network latency on the 2PC link (Config.LinkDelay, for measuring
// the paper's 19 ms inter-server RTT on loopback). Close stops it.
type delayWriter struct {
	w    io.Writer
	d    time.Duration
	q    chan delayed
	mu   sync.Mutex
	err  error
	done chan struct{}
}

type delayed struct {
	due time.Time
	p   []byte
}

func newDelayWriter(w io.Writer, d time.Duration) *delayWriter {
	dw := &delayWriter{w: w, d: d, q: make(chan delayed, 4096), done: make(chan struct{})}
	go dw.run()
	return dw
}

func (dw *delayWriter) run() {
	defer close(dw.done)
	for m := range dw.q {
		time.Sleep(time.Until(m.due))
		if _, err := dw.w.Write(m.p); err != nil {
			dw.mu.Lock()
			dw.err = err
			dw.mu.Unlock()
		}
	}
}

func (dw *delayWriter) Write(p []byte) (int, error) {
	dw.mu.Lock()
	err := dw.err
	dw.mu.Unlock()
	if err != nil {
		return 0, err
	}
	dw.q <- delayed{due: time.Now().Add(dw.d), p: append([]byte{}, p...)}
	return len(p), nil
}

// Close stops delivering after the queued writes.
func (dw *delayWriter) Close() {
	close(dw.q)
	<-dw.done
}
