package access

import (
	"fmt"
	"testing"

	"github.com/veil-project/veil/internal/metal/ac"
)

// BenchmarkAccess: one WriteFile (then ReadFile: the same protocol) through both servers over
// loopback TCP, at small sizes (with D <= 10 the position map is the base map alone; `veil
// bench metal` measures the larger ones). Larger runs:
//
//	go test ./internal/metal/access -run '^$' -bench Access -benchtime 3x
func BenchmarkAccess(b *testing.B) {
	for _, p := range []Params{
		{D: 6, Stash: 33, BlockSize: 1024, FilesPerAccount: 16, Pack: 3, Base: 10},
		{D: 10, Stash: 33, BlockSize: 1024, FilesPerAccount: 16, Pack: 3, Base: 10},
		{D: 10, Stash: 33, BlockSize: 4096, FilesPerAccount: 16, Pack: 3, Base: 10},
		{D: 16, Stash: 33, BlockSize: 4096, FilesPerAccount: 16, Pack: 3, Base: 10}, // the target point
	} {
		b.Run(fmt.Sprintf("files=%d/block=%d", p.Files(), p.BlockSize), func(b *testing.B) {
			r := newRig(b, p)
			c := r.createAccount(b)
			data := make([]byte, p.BlockSize)
			var sum Timings
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				op := ac.Write
				if i%2 == 1 {
					op = ac.Read
				}
				if _, err := r.access(b, c, uint64(i%16), op, data); err != nil {
					b.Fatal(err)
				}
				t := r.s1.LastTimings()
				sum.Front += t.Front
				sum.IndexORAM += t.IndexORAM
				sum.Fetch += t.Fetch
				sum.Mid += t.Mid
				sum.Permute += t.Permute
				sum.Commit += t.Commit
			}
			n := float64(b.N)
			for _, m := range []struct {
				d    float64
				name string
			}{{sum.Front.Seconds(), "front-s/op"}, {sum.IndexORAM.Seconds(), "indexoram-s/op"}, {sum.Fetch.Seconds(), "fetch-s/op"},
				{sum.Mid.Seconds(), "split-s/op"}, {sum.Permute.Seconds(), "permute-s/op"}, {sum.Commit.Seconds(), "commit-s/op"}} {
				b.ReportMetric(m.d/n, m.name)
			}
		})
	}
}
