package circuit

// EAX for messages of several complete blocks (Metal-SHARE's broadcast-list entries): the
// same construction as EAXSeal, with CTR over n blocks (counter N + j, big-endian over the
// whole block, as EAX specifies) and OMAC^2 over the n ciphertext blocks.

// incBE returns x + j for a 128-bit block read as a big-endian integer (byte 0 most
// significant), j a small public constant. 127 AND gates.
func (b *Builder) incBE(x Word, j uint64) Word {
	return reverseBytes(b.Add(reverseBytes(x), Const(j, 128)))
}

// omacN returns OMAC^t(m) for m of one or more complete blocks.
func (b *Builder) omacN(k eaxKeys, t byte, m Word) Word {
	tb := make([]byte, 16)
	tb[15] = t
	x := b.AES128(k.key, ConstBytes(tb))
	n := len(m) / 128
	for j := 0; j < n; j++ {
		blk := b.XorW(x, m[128*j:128*(j+1)])
		if j == n-1 {
			blk = b.XorW(blk, k.k1)
		}
		x = b.AES128(k.key, blk)
	}
	return x
}

// EAXSealBlocks encrypts msg (a positive multiple of 128 bits) under key with a 16-byte
// nonce and an empty header, returning the ciphertext (len(msg) bits) and the 16-byte tag:
// the output of any EAX implementation with those parameters. 2n+4 AES calls.
func (b *Builder) EAXSealBlocks(key, nonce, msg Word) (ct, tag Word) {
	if len(msg) == 0 || len(msg)%128 != 0 {
		if b.err == nil {
			b.err = errMsgBlocks
		}
		return make(Word, len(msg)), make(Word, 128)
	}
	k := b.eaxSetup(key)
	n := b.omac(k, 0, nonce)
	h := b.omac(k, 1, nil)
	ct = make(Word, 0, len(msg))
	for j := 0; j < len(msg)/128; j++ {
		ctr := n
		if j > 0 {
			ctr = b.incBE(n, uint64(j))
		}
		ct = append(ct, b.XorW(msg[128*j:128*(j+1)], b.AES128(key, ctr))...)
	}
	tag = b.XorW(b.XorW(n, h), b.omacN(k, 2, ct))
	return ct, tag
}

type circuitError string

func (e circuitError) Error() string { return string(e) }

const errMsgBlocks = circuitError("circuit: EAXSealBlocks needs a message of whole 128-bit blocks")
