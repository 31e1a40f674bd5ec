package mle_test

import (
	"testing"

	"github.com/veil-project/veil/internal/bench/mle"
	"github.com/veil-project/veil/internal/mle"
)

// BenchmarkMLE/<scheme>/<size>: KeyGen + Enc + TagGen, the paper's measure.
// BenchmarkPrimitive/<SHA256|BLAKE3|AESCTR>/<size>: the primitives alone.
func BenchmarkMLE(b *testing.B)       { run(b, "MLE", mle.SHA256) }
func BenchmarkMLEBLAKE3(b *testing.B) { run(b, "MLE", mle.BLAKE3) }
func BenchmarkPrimitive(b *testing.B) { run(b, "Primitive", mle.DefaultSuite) }

func run(b *testing.B, group string, s mle.Suite) {
	for _, c := range mlebench.Cases(s) {
		if c.Group == group {
			b.Run(c.FullName(), c.Fn)
		}
	}
}
