package twopc

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
)

// andCircuit is 2^17 AND gates over random earlier wires (plus the inputs): the pure
// AND-gate rate, as the "AND gates/s" target asks.
func andCircuit(b testing.TB) *circuit.Circuit {
	r := rand.New(rand.NewPCG(9, 9))
	bl := circuit.NewBuilder()
	bits := append(bl.Input(1, 128), bl.Input(2, 128)...)
	for i := 0; i < 1<<17; i++ {
		x, y := bits[len(bits)-1-r.IntN(256)], bits[len(bits)-1-r.IntN(256)]
		for x == y {
			y = bits[r.IntN(len(bits))]
		}
		bits = append(bits, bl.And(x, y))
	}
	bl.Output(circuit.Shared, bits[len(bits)-128:]...)
	c, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func benchLabels(c *circuit.Circuit) ([]Label, Label) {
	labels := make([]Label, c.NumWires)
	for i := 0; i < c.In1+c.In2; i++ {
		labels[i] = Label{rand.Uint64(), rand.Uint64()}
	}
	return labels, Label{rand.Uint64() | 1, rand.Uint64()}
}

func benchGarble(b *testing.B, c *circuit.Circuit) {
	h := newHasher()
	labels, delta := benchLabels(c)
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := garble(c, h, delta, labels, uint64(i)*uint64(2*c.NumAND), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.NumAND)*float64(b.N)/b.Elapsed().Seconds(), "AND/s")
	reportPerCPU(b, cpu, float64(c.NumAND)*float64(b.N), "AND")
}

// BenchmarkGarble: garbling rate on one core (no network), AND gates per second.
func BenchmarkGarble(b *testing.B) { benchGarble(b, andCircuit(b)) }

// BenchmarkGarbleAES: the Bristol AES-128 circuit (6400 AND + 30263 free gates).
func BenchmarkGarbleAES(b *testing.B) { benchGarble(b, aesCircuit(b, circuit.Public)) }

// BenchmarkEvaluate: evaluation rate on one core from in-memory tables.
func BenchmarkEvaluate(b *testing.B) {
	c := andCircuit(b)
	h := newHasher()
	labels, delta := benchLabels(c)
	var tables bytes.Buffer
	if err := garble(c, h, delta, labels, 0, &tables); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := evaluate(c, h, labels, 0, bytes.NewReader(tables.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.NumAND)*float64(b.N)/b.Elapsed().Seconds(), "AND/s")
	reportPerCPU(b, cpu, float64(c.NumAND)*float64(b.N), "AND")
}

// BenchmarkOTExtension: correlated OTs per second, both parties over loopback TCP
// (2^16 OTs per extension).
func BenchmarkOTExtension(b *testing.B) {
	g, e := pair(b)
	const m = 1 << 16
	x := make([]bool, m)
	for j := range x {
		x[j] = j%3 == 0
	}
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		done := make(chan error)
		go func() {
			_, err := g.cotS.extend(m, g.rw)
			done <- err
		}()
		if _, err := e.cotR.extend(x, e.rw); err != nil {
			b.Fatal(err)
		}
		if err := e.rw.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(m)*float64(b.N)/b.Elapsed().Seconds(), "OT/s")
	// Both parties run in this process: per CPU-second of the pair.
	reportPerCPU(b, cpu, float64(m)*float64(b.N), "OT")
}

// BenchmarkRunAES: one full 2PC AES-128 (key from party 1, block from party 2, shared
// output) per op, both parties over loopback TCP.
func BenchmarkRunAES(b *testing.B) {
	g, e := pair(b)
	c := aesCircuit(b, circuit.Shared)
	in := make([]bool, 128)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err1, err2 := both(g, e, c, in, in); err1 != nil || err2 != nil {
			b.Fatal(err1, err2)
		}
	}
}

// BenchmarkSessionSetup: hello plus 128 base OTs over loopback TCP.
func BenchmarkSessionSetup(b *testing.B) {
	for i := 0; i < b.N; i++ {
		pair(b)
	}
}
