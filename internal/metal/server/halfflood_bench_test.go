package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"sync"
	"testing"
	"time"
)

// BenchmarkAccountUnderHalfFlood: one account creation (ns/op) on a 10 ms link while 200
// clients keep sending Server 1 requests Server 2 never gets (the review's reproduction;
// the servers' pair timeout is 2 s here). "quiet" is the same without the flood. The flood
// comes from another address, and the servers here let all 200 wait (their default limits,
// 32 per address and half of 256 connections, would refuse most of them at once).
//
//	go test ./internal/metal/server -run '^$' -bench AccountUnderHalfFlood -benchtime 5x
func BenchmarkAccountUnderHalfFlood(b *testing.B) {
	for _, flood := range []int{0, 200} {
		name := map[bool]string{true: "quiet", false: "flood200"}[flood == 0]
		b.Run(name, func(b *testing.B) {
			params := testParams
			params.D = 10 // 512 accounts
			p := startPairParams(b, 10*time.Millisecond, 2*time.Second, params, func(c *Config) { c.MaxConns, c.MaxWaitingPerAddr = 1024, 1024 })
			c := p.client(b)
			if _, err := c.CreateAccount(context.Background()); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			b.Cleanup(func() { cancel(); wg.Wait() })
			hc := httpClientFrom(b, p.dep.CA1, flooder)
			for range flood {
				wg.Go(func() {
					for ctx.Err() == nil {
						id := make([]byte, idLen)
						rand.Read(id)
						req, _ := http.NewRequestWithContext(ctx, "POST", "https://"+p.addr[0]+"/v1/account", bytes.NewReader(id))
						if resp, err := hc.Do(req); err == nil {
							resp.Body.Close()
						}
					}
				})
			}
			if flood > 0 {
				time.Sleep(3 * time.Second)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := c.CreateAccount(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
