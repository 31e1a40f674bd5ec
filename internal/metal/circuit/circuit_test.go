package circuit

import (
	"bytes"
	"compress/gzip"
	"crypto/aes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"
)

func TestEmbeddedAESIsTheVettedFile(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(aes128Gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != "f432558c8341a91a695f3a7d1377c78a76e51785a24c0f25ee555aa1319b22bb" {
		t.Fatalf("embedded aes_128 circuit sha256 %s", got)
	}
}

func aesCircuit(t testing.TB) *Circuit {
	b := NewBuilder()
	k := b.Input(1, 128)
	m := b.Input(2, 128)
	b.Output(Public, b.AES128(k, m)...)
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAES128AgainstCryptoAES(t *testing.T) {
	c := aesCircuit(t)
	if c.NumAND != 6400 {
		t.Fatalf("AES circuit has %d AND gates, want 6400", c.NumAND)
	}
	// FIPS-197 Appendix C.1 plus random keys and blocks.
	key, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f")
	pt, _ := hex.DecodeString("00112233445566778899aabbccddeeff")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		if i > 0 {
			for j := range key {
				key[j], pt[j] = byte(r.Uint32()), byte(r.Uint32())
			}
		}
		out, err := c.Eval(BytesToBits(key), BytesToBits(pt))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := aes.NewCipher(key)
		want := make([]byte, 16)
		blk.Encrypt(want, pt)
		if got := BitsToBytes(out); !bytes.Equal(got, want) {
			t.Fatalf("AES(%x, %x) = %x, want %x", key, pt, got, want)
		}
		if i == 0 && hex.EncodeToString(want) != "69c4e0d86a7b0430d8cdb78070b4c55a" {
			t.Fatalf("FIPS-197 C.1 mismatch")
		}
	}
}

func TestWordOpsAgainstPlain(t *testing.T) {
	const n = 16
	b := NewBuilder()
	x := b.Input(1, n)
	ys := b.Input(1, n)
	yt := b.Input(2, n)
	sel := b.Input(2, 1)[0]
	y := b.XorW(ys, yt) // y arrives XOR-shared
	b.Output(Public, b.Add(x, y)...)
	b.Output(Public, b.Sub(x, y)...)
	b.Output(Public, b.Less(x, y), b.Eq(x, y), b.IsZero(x), b.Or(x[0], y[0]))
	b.Output(Public, b.Mux(sel, x, y)...)
	b.Output(Public, b.AndW(x, y)...)
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		xv, yv := uint64(r.Uint32()&0xffff), uint64(r.Uint32()&0xffff)
		if i%7 == 0 {
			yv = xv
		}
		if i%11 == 0 {
			xv = 0
		}
		mask := uint64(r.Uint32() & 0xffff)
		s := i%2 == 1
		in1 := append(Uint64ToBits(xv, n), Uint64ToBits(yv^mask, n)...)
		in2 := append(Uint64ToBits(mask, n), s)
		out, err := c.Eval(in1, in2)
		if err != nil {
			t.Fatal(err)
		}
		get := func(k int) uint64 { return BitsToUint64(out[k*n : (k+1)*n]) }
		if got := get(0); got != (xv+yv)&0xffff {
			t.Fatalf("%d+%d = %d", xv, yv, got)
		}
		if got := get(1); got != (xv-yv)&0xffff {
			t.Fatalf("%d-%d = %d", xv, yv, got)
		}
		flags := out[2*n : 2*n+4]
		if flags[0] != (xv < yv) || flags[1] != (xv == yv) || flags[2] != (xv == 0) || flags[3] != ((xv|yv)&1 == 1) {
			t.Fatalf("flags %v for %d, %d", flags, xv, yv)
		}
		mux := BitsToUint64(out[2*n+4 : 3*n+4])
		if want := map[bool]uint64{false: xv, true: yv}[s]; mux != want {
			t.Fatalf("mux(%v) = %d", s, mux)
		}
		if got := BitsToUint64(out[3*n+4:]); got != xv&yv {
			t.Fatalf("and = %d", got)
		}
	}
}

func TestConstantFolding(t *testing.T) {
	b := NewBuilder()
	x := b.Input(1, 8)
	if b.And(x[0], Zero) != Zero || b.And(x[0], One) != x[0] || b.Xor(x[1], x[1]) != Zero ||
		b.Not(b.Not(x[2])) != x[2] || b.Xor(x[3], Zero) != x[3] {
		t.Fatal("folding rules broken")
	}
	// AES under a public key costs only the data path: 5120 ANDs, not 6400.
	b.Output(Public, b.AES128(Const(0, 128), b.Input(2, 128))...)
	b.Output(Shared, Zero, One)
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if c.NumAND != 5120 {
		t.Fatalf("AES with a constant key: %d ANDs, want 5120", c.NumAND)
	}
	out, err := c.Eval(make([]bool, 8), make([]bool, 128))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := aes.NewCipher(make([]byte, 16))
	want := make([]byte, 16)
	blk.Encrypt(want, make([]byte, 16))
	if !bytes.Equal(BitsToBytes(out[:128]), want) || out[128] || !out[129] {
		t.Fatal("constant-key AES or constant outputs wrong")
	}
}

func TestBuilderErrors(t *testing.T) {
	if _, err := NewBuilder().Build(); err == nil {
		t.Fatal("circuit without outputs accepted")
	}
	b := NewBuilder()
	b.Output(Public, b.XorW(b.Input(1, 3), b.Input(2, 4))...)
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "3-bit and 4-bit") {
		t.Fatalf("length mismatch: %v", err)
	}
	b = NewBuilder()
	b.Output(Public, Bit(7))
	if _, err := b.Build(); err == nil {
		t.Fatal("foreign bit accepted")
	}
	b = NewBuilder()
	b.Output(Public, One)
	if _, err := b.Build(); err == nil {
		t.Fatal("constant output without inputs accepted")
	}
	c := aesCircuit(t)
	if _, err := c.Eval(make([]bool, 127), make([]bool, 128)); err == nil {
		t.Fatal("short input accepted")
	}
}

func TestDigestNamesTheCircuit(t *testing.T) {
	c1, c2 := aesCircuit(t), aesCircuit(t)
	if c1.Digest() != c2.Digest() {
		t.Fatal("same circuit, different digests")
	}
	b := NewBuilder()
	k, m := b.Input(1, 128), b.Input(2, 128)
	b.Output(Shared, b.AES128(k, m)...)
	c3, _ := b.Build()
	if c3.Digest() == c1.Digest() {
		t.Fatal("output kind not in digest")
	}
}

func eaxCircuit(t testing.TB) *Circuit {
	b := NewBuilder()
	key := b.SharedInput(128) // the capability key, XOR-shared between the servers
	nonce, msg := b.Input(1, 128), b.Input(1, 128)
	ct, tag := b.Input(2, 128), b.Input(2, 128)
	sct, stag := b.EAXSeal(key, nonce, msg)
	b.Output(Public, sct...)
	b.Output(Public, stag...)
	m, ok := b.EAXOpen(key, nonce, ct, tag)
	b.Output(Public, m...)
	b.Output(Public, ok)
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEAXAgainstLibrary(t *testing.T) {
	c := eaxCircuit(t)
	r := rand.New(rand.NewPCG(5, 6))
	rb := func() []byte {
		p := make([]byte, 16)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		return p
	}
	for i := 0; i < 6; i++ {
		k1, k2, nonce, msg := rb(), rb(), rb(), rb()
		key := make([]byte, 16)
		for j := range key {
			key[j] = k1[j] ^ k2[j]
		}
		blk, _ := aes.NewCipher(key)
		aead, err := eax.NewEAX(blk)
		if err != nil {
			t.Fatal(err)
		}
		sealed := aead.Seal(nil, nonce, msg, nil) // ct || tag
		ct, tag := append([]byte(nil), sealed[:16]...), append([]byte(nil), sealed[16:]...)
		wantOK := true
		switch i {
		case 3:
			ct[r.IntN(16)] ^= 1 << r.IntN(8)
			wantOK = false
		case 4:
			tag[r.IntN(16)] ^= 1 << r.IntN(8)
			wantOK = false
		}
		var in1, in2 []bool
		in1 = append(append(append(in1, BytesToBits(k1)...), BytesToBits(nonce)...), BytesToBits(msg)...)
		in2 = append(append(append(in2, BytesToBits(k2)...), BytesToBits(ct)...), BytesToBits(tag)...)
		out, err := c.Eval(in1, in2)
		if err != nil {
			t.Fatal(err)
		}
		if got := BitsToBytes(out[:256]); !bytes.Equal(got, sealed) {
			t.Fatalf("EAX seal in circuit %x, library %x", got, sealed)
		}
		if ok := out[384]; ok != wantOK {
			t.Fatalf("case %d: EAX open ok=%v, want %v", i, ok, wantOK)
		}
		if wantOK && !bytes.Equal(BitsToBytes(out[256:384]), msg) {
			t.Fatal("EAX open returned the wrong message")
		}
	}
}
