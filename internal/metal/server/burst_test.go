package server

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestHonestBurstServed: a burst of honest calls, more than the servers let wait for
// their other part (half of --max-conns: 4 here, servers taking 8 connections), with no
// flood. Their parts reach Server 2 while Server 1 runs the calls before them one at a
// time, so Server 2 answers the ones that waited longest 409 "busy (try again)"; the
// client library retries those (backoff with jitter, for a bounded time), so every call
// of the burst succeeds. The user saw the 409.
func TestHonestBurstServed(t *testing.T) {
	const n = 12
	p := startPairParams(t, 0, 10*time.Second, testParams, func(c *Config) { c.MaxConns = 8 })
	waitLink(t, p, "1")
	c := p.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := writtenAccount(ctx, t, c, "burst")
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Read(ctx, a.Capability, a.First)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a read of a burst of %d: %v", n, err)
		}
	}
	t.Logf("%d reads in %v", n, time.Since(start))
}
