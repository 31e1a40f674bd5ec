package store

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/veil-project/veil/internal/storage"
)

// BenchmarkPut4KiB measures 4 KiB puts with 16 concurrent clients, in-process and through
// the HTTPS API: go test ./internal/store -run '^$' -bench Put4KiB
func BenchmarkPut4KiB(b *testing.B) {
	for _, via := range []string{"inprocess", "https"} {
		b.Run(via, func(b *testing.B) {
			s := newTestService(&testing.T{}, Config{})
			ns, cred := addUser(&testing.T{}, s, "bench")
			var be storage.Backend = ns
			if via == "https" {
				t := &testing.T{}
				be = remoteFor(t, serve(t, s), cred)
			}
			var n atomic.Int64
			b.SetParallelism(8) // 16 clients on 2 CPUs
			b.SetBytes(4096)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				data := make([]byte, 4096)
				for pb.Next() {
					i := n.Add(1)
					data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
					if err := be.Put(b.Context(), "d", fmt.Sprint(i), bytes.NewReader(data), 4096); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.StopTimer()
			var m dto.Metric
			s.metrics.group.Write(&m)
			h := m.GetHistogram()
			if h.GetSampleCount() > 0 {
				b.ReportMetric(h.GetSampleSum()/float64(h.GetSampleCount()), "puts/commit")
			}
		})
	}
}
