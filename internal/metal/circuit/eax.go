package circuit

// EAX inside the circuit, for one-block messages and an empty header: the authenticated
// encryption of Metal-AC capabilities (paper Section 4, EAX as in Section 7.2). Byte strings
// are 128-bit words in BytesToBits order. The construction is EAX exactly as Bellare,
// Rogaway and Wagner define it (OMAC = CMAC with the tweak block [t]), so the ciphertexts
// are those of any EAX implementation with a 16-byte nonce and tag (tested against
// github.com/ProtonMail/go-crypto/eax).

// dbl multiplies a 128-bit block by x in GF(2^128) (the CMAC subkey step): a left shift of
// the big-endian block, XORing 0x87 into the last byte if the top bit was set. Free.
func (b *Builder) dbl(x Word) Word {
	out := make(Word, 128)
	for i := 0; i < 16; i++ {
		for j := 7; j >= 1; j-- {
			out[8*i+j] = x[8*i+j-1]
		}
		if i < 15 {
			out[8*i] = x[8*(i+1)+7]
		} else {
			out[8*i] = Zero
		}
	}
	msb := x[7]
	for _, j := range []int{0, 1, 2, 7} {
		out[8*15+j] = b.Xor(out[8*15+j], msb)
	}
	return out
}

// eaxKeys holds what every OMAC under one key shares: K1 = dbl(E(0)) and E(0) itself, which
// is also the first CBC step of every OMAC^t with t = 0.
type eaxKeys struct {
	key, l, k1 Word
}

func (b *Builder) eaxSetup(key Word) eaxKeys {
	l := b.AES128(key, Const(0, 128))
	return eaxKeys{key: key, l: l, k1: b.dbl(l)}
}

// omac returns OMAC^t(m) = CMAC([t] || m) for one complete block m (nil m: CMAC([t]) alone).
func (b *Builder) omac(k eaxKeys, t byte, m Word) Word {
	tb := make([]byte, 16)
	tb[15] = t
	first := ConstBytes(tb)
	if m == nil {
		return b.AES128(k.key, b.XorW(first, k.k1))
	}
	var x Word
	if t == 0 {
		x = k.l // E([0]) = E(0^128)
	} else {
		x = b.AES128(k.key, first)
	}
	return b.AES128(k.key, b.XorW(b.XorW(x, m), k.k1))
}

// EAXSeal encrypts the one-block message msg under key with nonce (16 bytes) and returns
// the ciphertext block and the 16-byte tag. Six AES calls.
func (b *Builder) EAXSeal(key, nonce, msg Word) (ct, tag Word) {
	k := b.eaxSetup(key)
	n := b.omac(k, 0, nonce)
	h := b.omac(k, 1, nil)
	ct = b.XorW(msg, b.AES128(key, n))
	c := b.omac(k, 2, ct)
	tag = b.XorW(b.XorW(n, h), c)
	return ct, tag
}

// EAXOpen decrypts ct and checks tag; ok is 1 iff the tag is valid. msg is computed either
// way; callers must gate every use of it on ok (e.g. with Mux), as Metal-AC does.
func (b *Builder) EAXOpen(key, nonce, ct, tag Word) (msg Word, ok Bit) {
	k := b.eaxSetup(key)
	n := b.omac(k, 0, nonce)
	h := b.omac(k, 1, nil)
	c := b.omac(k, 2, ct)
	ok = b.Eq(b.XorW(b.XorW(n, h), c), tag)
	msg = b.XorW(ct, b.AES128(key, n))
	return msg, ok
}
