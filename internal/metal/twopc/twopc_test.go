package twopc

import (
	"bytes"
	"crypto/aes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
)

func TestTranspose(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	cols := make([][]byte, 128)
	for i := range cols {
		cols[i] = make([]byte, 32)
		for k := range cols[i] {
			cols[i][k] = byte(r.Uint32())
		}
	}
	rows := transposeAll(cols, 32, 256)
	for j := 0; j < 256; j++ {
		for i := 0; i < 128; i++ {
			want := cols[i][j/8]>>(uint(j)%8)&1 == 1
			if bit(rows[j], i) != want {
				t.Fatalf("row %d bit %d", j, i)
			}
		}
	}
}

func TestCorrelatedOT(t *testing.T) {
	g, e := pair(t)
	for _, m := range []int{1, 127, 128, 129, 1000} {
		x := make([]bool, m)
		for j := range x {
			x[j] = rand.IntN(2) == 1
		}
		done := make(chan []Label)
		go func() {
			q, err := g.cotS.extend(m, g.rw)
			if err != nil {
				t.Error(err)
			}
			done <- q
		}()
		tl, err := e.cotR.extend(x, e.rw)
		if err != nil {
			t.Fatal(err)
		}
		e.rw.Flush()
		q := <-done
		for j := range x {
			want := q[j]
			if x[j] {
				want = want.xor(g.delta)
			}
			if tl[j] != want {
				t.Fatalf("m=%d: OT %d: t != q XOR x*Delta", m, j)
			}
			if !x[j] && tl[j] == tl[j].xor(g.delta) {
				t.Fatal("zero Delta")
			}
		}
	}
}

func aesCircuit(t testing.TB, k circuit.Kind) *circuit.Circuit {
	b := circuit.NewBuilder()
	key, msg := b.Input(1, 128), b.Input(2, 128)
	b.Output(k, b.AES128(key, msg)...)
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The Bristol AES-128 circuit garbled and evaluated by two parties over loopback TCP gives
// crypto/aes's answer, for every kind of output.
func TestAESKnownAnswerOverTCP(t *testing.T) {
	g, e := pair(t)
	r := rand.New(rand.NewPCG(2, 2))
	for _, kind := range []circuit.Kind{circuit.Public, circuit.Party1, circuit.Party2, circuit.Shared} {
		c := aesCircuit(t, kind)
		for i := 0; i < 3; i++ {
			key, pt := make([]byte, 16), make([]byte, 16)
			for j := range key {
				key[j], pt[j] = byte(r.Uint32()), byte(r.Uint32())
			}
			blk, _ := aes.NewCipher(key)
			want := make([]byte, 16)
			blk.Encrypt(want, pt)
			o1, o2, err1, err2 := both(g, e, c, circuit.BytesToBits(key), circuit.BytesToBits(pt))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			b1, b2 := circuit.BitsToBytes(o1), circuit.BitsToBytes(o2)
			zero := make([]byte, 16)
			var ok bool
			switch kind {
			case circuit.Public:
				ok = bytes.Equal(b1, want) && bytes.Equal(b2, want)
			case circuit.Party1:
				ok = bytes.Equal(b1, want) && bytes.Equal(b2, zero)
			case circuit.Party2:
				ok = bytes.Equal(b1, zero) && bytes.Equal(b2, want)
			case circuit.Shared:
				x := make([]byte, 16)
				for j := range x {
					x[j] = b1[j] ^ b2[j]
				}
				ok = bytes.Equal(x, want) && !bytes.Equal(b1, want) && !bytes.Equal(b2, want)
			}
			if !ok {
				t.Fatalf("%v: got %x / %x, want %x", kind, b1, b2, want)
			}
		}
	}
	if st := g.Stats(); st.ANDGates != 12*6400 || st.Runs != 12 {
		t.Fatalf("stats %+v", st)
	}
}

// randomCircuit builds a random circuit over all gate kinds and output kinds.
func randomCircuit(t testing.TB, r *rand.Rand, n1, n2, gates int) *circuit.Circuit {
	b := circuit.NewBuilder()
	var bits []circuit.Bit
	bits = append(bits, b.Input(1, n1)...)
	bits = append(bits, b.Input(2, n2)...)
	for len(bits) < n1+n2+gates {
		x, y := bits[r.IntN(len(bits))], bits[r.IntN(len(bits))]
		var z circuit.Bit
		switch r.IntN(3) {
		case 0:
			z = b.And(x, y)
		case 1:
			z = b.Xor(x, y)
		default:
			z = b.Not(x)
		}
		bits = append(bits, z)
	}
	for i := 0; i < 64; i++ {
		b.Output(circuit.Kind(r.IntN(4)), bits[len(bits)-1-r.IntN(gates)])
	}
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func randBits(r *rand.Rand, n int) []bool {
	v := make([]bool, n)
	for i := range v {
		v[i] = r.IntN(2) == 1
	}
	return v
}

// Random circuits, many runs on one session (tweaks and OT streams advance), against plain
// evaluation.
func TestRandomCircuitsAgainstPlain(t *testing.T) {
	g, e := pair(t)
	r := rand.New(rand.NewPCG(3, 3))
	for round := 0; round < 40; round++ {
		c := randomCircuit(t, r, 1+r.IntN(200), r.IntN(300), 1+r.IntN(3000))
		in1, in2 := randBits(r, c.In1), randBits(r, c.In2)
		want, err := c.Eval(in1, in2)
		if err != nil {
			t.Fatal(err)
		}
		o1, o2, err1, err2 := both(g, e, c, in1, in2)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for i, o := range c.Outputs {
			var got bool
			switch o.Kind {
			case circuit.Public:
				if o1[i] != o2[i] {
					t.Fatalf("round %d output %d: public bit differs", round, i)
				}
				got = o1[i]
			case circuit.Party1:
				got = o1[i]
			case circuit.Party2:
				got = o2[i]
			case circuit.Shared:
				got = o1[i] != o2[i]
			}
			if got != want[i] {
				t.Fatalf("round %d output %d (%v): got %v want %v", round, i, o.Kind, got, want[i])
			}
		}
	}
}

// Reactive state: a 64-bit accumulator lives only as XOR shares between runs. Each run
// adds party 2's input and outputs the new state shared; the last reveals it.
func TestReactiveStateAsShares(t *testing.T) {
	g, e := pair(t)
	step := func(reveal bool) *circuit.Circuit {
		b := circuit.NewBuilder()
		st := b.SharedInput(64)
		x := b.Input(2, 64)
		next := b.Add(st, x)
		k := circuit.Shared
		if reveal {
			k = circuit.Public
		}
		b.Output(k, next...)
		c, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c, last := step(false), step(true)
	s1, s2 := make([]bool, 64), make([]bool, 64)
	var sum uint64
	ones := 0
	r := rand.New(rand.NewPCG(4, 4))
	const runs = 30
	for i := 0; i < runs; i++ {
		x := r.Uint64()
		sum += x
		cc := c
		if i == runs-1 {
			cc = last
		}
		o1, o2, err1, err2 := both(g, e, cc, s1, append(append([]bool{}, s2...), circuit.Uint64ToBits(x, 64)...))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if i == runs-1 {
			if got := circuit.BitsToUint64(o1); got != sum || circuit.BitsToUint64(o2) != sum {
				t.Fatalf("revealed state %d, want %d", got, sum)
			}
			break
		}
		s1, s2 = o1, o2
		if circuit.BitsToUint64(s1)^circuit.BitsToUint64(s2) != sum {
			t.Fatalf("run %d: shares do not reconstruct the state", i)
		}
		for _, v := range s1 {
			if v {
				ones++
			}
		}
	}
	// Party 1's shares look random: not the state, not constant (29 runs x 64 bits).
	if n := (runs - 1) * 64; ones < n/4 || ones > 3*n/4 {
		t.Fatalf("party 1's share bits: %d ones of %d", ones, n)
	}
}

func TestMismatchedCircuitsFailBothSides(t *testing.T) {
	g, e := pair(t)
	c1 := aesCircuit(t, circuit.Public)
	c2 := aesCircuit(t, circuit.Shared)
	done := make(chan error)
	go func() {
		_, err := g.Run(c1, make([]bool, 128))
		done <- err
	}()
	_, err2 := e.Run(c2, make([]bool, 128))
	err1 := <-done
	if err1 == nil || err2 == nil || !strings.Contains(err1.Error(), "peer runs circuit") {
		t.Fatalf("mismatch not detected: %v / %v", err1, err2)
	}
}

func TestBadInputLength(t *testing.T) {
	g, _ := pair(t)
	if _, err := g.Run(aesCircuit(t, circuit.Public), make([]bool, 12)); err == nil {
		t.Fatal("short input accepted")
	}
}

// Shares outlive sessions: state shared under one session (one Delta, one set of base OTs)
// is carried into a brand-new session, as after a restart of either server.
func TestSharesSurviveNewSession(t *testing.T) {
	b := circuit.NewBuilder()
	st := b.SharedInput(32)
	b.Output(circuit.Shared, b.Add(st, circuit.Const(5, 32))...)
	step, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	b = circuit.NewBuilder()
	b.Output(circuit.Public, b.SharedInput(32)...)
	reveal, _ := b.Build()
	s1, s2 := make([]bool, 32), make([]bool, 32)
	for sess := 0; sess < 3; sess++ {
		g, e := pair(t)
		for i := 0; i < 2; i++ {
			o1, o2, err1, err2 := both(g, e, step, s1, s2)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			s1, s2 = o1, o2
		}
	}
	g, e := pair(t)
	o1, _, err1, err2 := both(g, e, reveal, s1, s2)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if got := circuit.BitsToUint64(o1); got != 30 {
		t.Fatalf("state after 6 steps over 4 sessions: %d, want 30", got)
	}
}

func TestMessagesBetweenRuns(t *testing.T) {
	g, e := pair(t)
	c := aesCircuit(t, circuit.Public)
	for i := 0; i < 3; i++ {
		msg := bytes.Repeat([]byte{byte(i)}, 1000*i)
		done := make(chan error)
		go func() { done <- g.SendMessage(msg) }()
		got, err := e.ReceiveMessage()
		if err != nil || !bytes.Equal(got, msg) || <-done != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if _, _, err1, err2 := both(g, e, c, make([]bool, 128), make([]bool, 128)); err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
	}
	if err := g.SendMessage(make([]byte, MaxMessage+1)); err == nil {
		t.Fatal("oversized message sent")
	}
}
