package primitive

import (
	"fmt"
	"testing"

	"github.com/veil-project/veil/internal/metal/ac"
)

// BenchmarkAccess: one Primitive Metal access (a write, then a read: the same circuits)
// through both servers over loopback TCP, stash 33. Larger points: `veil bench metal
// --primitive`.
//
//	go test ./internal/metal/primitive -run '^$' -bench Access -benchtime 2x
func BenchmarkAccess(b *testing.B) {
	for _, p := range []Params{{D: 4, Stash: 33, BlockSize: 1024, FilesPerAccount: 16}} {
		b.Run(fmt.Sprintf("files=%d/block=%d", p.Files(), p.BlockSize), func(b *testing.B) {
			r := newRig(b, p)
			c, first := r.createAccount(b)
			data := make([]byte, p.BlockSize)
			ands := r.s1.sess.Stats().ANDGates
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				op := ac.Write
				if i%2 == 1 {
					op = ac.Read
				}
				if _, err := r.access(b, c, first, op, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.s1.sess.Stats().ANDGates-ands)/float64(b.N), "AND/access")
		})
	}
}
