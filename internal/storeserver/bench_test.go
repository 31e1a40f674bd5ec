package storeserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/veil-project/veil/internal/storage"
)

// BenchmarkPut4KiB measures 4 KiB puts with 16 concurrent clients, in-process and through
// the HTTPS API, by a user without a quota and (inprocess-quota) by one with a quota,
// whose puts take part in quota reservations: go test ./internal/storeserver -run '^$' -bench Put4KiB
func BenchmarkPut4KiB(b *testing.B) {
	for _, via := range []string{"inprocess", "inprocess-quota", "https"} {
		b.Run(via, func(b *testing.B) {
			s := newTestService(b, Config{})
			var opts []UserOption
			if via == "inprocess-quota" {
				opts = append(opts, WithQuota(1<<40))
			}
			ns, cred := addUser(b, s, "bench", opts...)
			var be storage.Backend = ns
			if via == "https" {
				t := b
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

// BenchmarkGet64MiB measures one client reading a 64 MiB object through the HTTPS API.
func BenchmarkGet64MiB(b *testing.B) {
	t := b
	s := newTestService(t, Config{})
	_, cred := addUser(t, s, "bench")
	rb := remoteFor(t, serve(t, s), cred)
	data := randBytes(9, 64<<20)
	if err := rb.Put(b.Context(), "", "big", bytes.NewReader(data), int64(len(data))); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		rc, err := rb.Get(b.Context(), "", "big")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}

// BenchmarkGetSmall measures one client's GET of a 16 KiB object, and of an absent one
// (a 404: what a lone put's look at the next root number gets), through the HTTPS API:
// the per-request cost on client and service together.
func BenchmarkGetSmall(b *testing.B) {
	t := b
	s := newTestService(t, Config{})
	_, cred := addUser(t, s, "bench")
	rb := remoteFor(t, serve(t, s), cred)
	if err := rb.Put(b.Context(), "", "small", bytes.NewReader(randBytes(3, 16<<10)), 16<<10); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"small", "absent"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				rc, err := rb.Get(b.Context(), "", name)
				if err == nil {
					_, err = io.Copy(io.Discard, rc)
					rc.Close()
				}
				if err != nil && (name == "small" || !errors.Is(err, storage.ErrNotFound)) {
					b.Fatal(err)
				}
			}
		})
	}
}
