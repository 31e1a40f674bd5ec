package ksbench

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

func (r *runner) runHTTPS(ctx context.Context) error {
	tr := &http.Transport{TLSClientConfig: r.tls, ForceAttemptHTTP2: r.o.HTTP2,
		MaxIdleConns: r.o.Concurrency, MaxIdleConnsPerHost: r.o.Concurrency, IdleConnTimeout: time.Minute}
	if !r.o.HTTP2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	hc := &http.Client{Transport: tr, Timeout: r.o.Timeout}
	defer tr.CloseIdleConnections()
	base := strings.TrimSuffix(r.o.URL, "/")
	var wg sync.WaitGroup
	for w := range r.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var sent, ok, errs int64
			for i := w; ctx.Err() == nil; i++ {
				p := &r.reqs[i%len(r.reqs)]
				var req *http.Request
				if r.o.Static {
					req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
				} else {
					req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/evaluate", bytes.NewReader(p.body))
				}
				t0 := time.Now()
				sent++
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						errs++
					} else {
						sent--
					}
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || (!r.o.Static && r.check(p, body) != nil) {
					errs++
					continue
				}
				lat = append(lat, time.Since(t0))
				ok++
			}
			r.record(lat, sent, ok, errs, 0)
		}()
	}
	wg.Wait()
	return nil
}
