package oram

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Section 5.5's distributed permutation, the 2PC half. Permutations act by gathering:
// applying p to A gives B[j] = A[p[j]]. Server 1 applies its p1, then Server 2 its p2, so
// the result is A[p1[p2[j]]]; for that to be the secret permutation s, p2 = p1^-1 o s. Server
// 1 draws p1 uniformly at random itself and gives the circuit q = p1^-1; the circuit
// outputs p2[j] = q[s[j]] to Server 2 only. Server 1 learns nothing; Server 2 sees p2,
// uniformly random whatever s is, because p1 is uniform and unknown to it. (The paper
// samples p1 inside the computation; with semi-honest servers, letting Server 1 draw it
// gives both servers the same views.)

// splitCircuit: party 1 inputs q (n numbers of w bits), both input shares of s (n numbers);
// outputs p2 (n numbers) to party 2.
func splitCircuit(n, w int) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	qw := b.Input(1, n*w)
	sw := b.SharedInput(n * w)
	for j := 0; j < n; j++ {
		sj := sw[j*w : (j+1)*w]
		out := circuit.Const(0, w)
		for m := 0; m < n; m++ {
			hit := b.Eq(sj, circuit.Const(uint64(m), w))
			out = b.XorW(out, b.AndBit(hit, qw[m*w:(m+1)*w]))
		}
		b.Output(circuit.Party2, out...)
	}
	return b.Build()
}

// Splitter turns XOR-shared permutations of n slots into the two servers' halves.
type Splitter struct {
	sess *twopc.Session
	c    *circuit.Circuit
	n, w int
	rnd  *rand.Rand
}

// NewSplitter prepares the circuit for permutations of n slots written in w bits. seed
// supplies Server 1's randomness (32 bytes are read from it).
func NewSplitter(sess *twopc.Session, n, w int, seed io.Reader) (*Splitter, error) {
	c, err := splitCircuit(n, w)
	if err != nil {
		return nil, err
	}
	var k [32]byte
	if _, err := io.ReadFull(seed, k[:]); err != nil {
		return nil, err
	}
	return &Splitter{sess: sess, c: c, n: n, w: w, rnd: rand.New(rand.NewChaCha8(k))}, nil
}

// Split takes this server's shares of the permutation (n numbers) and returns its half: p1
// for Server 1 (the garbler), p2 for Server 2.
func (s *Splitter) Split(share [][]bool) ([]int, error) {
	if len(share) != s.n {
		return nil, fmt.Errorf("oram: permutation share of %d slots, want %d", len(share), s.n)
	}
	var in []bool
	var p1 []int
	if s.sess.Role() == twopc.Garbler {
		p1 = s.rnd.Perm(s.n)
		q := make([]int, s.n)
		for j, v := range p1 {
			q[v] = j
		}
		for _, v := range q {
			in = append(in, circuit.Uint64ToBits(uint64(v), s.w)...)
		}
	}
	for _, x := range share {
		if len(x) != s.w {
			return nil, fmt.Errorf("oram: permutation entry of %d bits, want %d", len(x), s.w)
		}
		in = append(in, x...)
	}
	out, err := s.sess.Run(s.c, in)
	if err != nil {
		return nil, err
	}
	if s.sess.Role() == twopc.Garbler {
		return p1, nil
	}
	p2 := make([]int, s.n)
	for j := range p2 {
		v := circuit.BitsToUint64(out[j*s.w : (j+1)*s.w])
		if v >= uint64(s.n) {
			return nil, fmt.Errorf("oram: permutation entry %d out of range", v)
		}
		p2[j] = int(v)
	}
	return p2, nil
}
