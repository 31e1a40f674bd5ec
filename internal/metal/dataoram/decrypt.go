package dataoram

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	ristretto "github.com/bwesterb/go-ristretto"
	"github.com/veil-project/veil/internal/metal/elgamal"
)

// Two-party decryption of the block Server 2 fetched, delivered to the client only.
// Per chunk (R, C) under P = X1 + X2:
//
//	Server 2: t random; sends Server 1  R'' = R + t*G
//	          sends the client          E   = C - x2*R + t*X1
//	Server 1: sends the client          D   = x1*R''  (= x1*R + t*X1)
//	client:   M = E - D = C - (x1 + x2)*R, then Lizard-decodes M
//
// Server 1 sees only R'', uniformly random and independent of R (so it cannot link the
// fetched block to any it offered); Server 2 never sees x1*R, so neither learns M.

func points(p []byte) ([]ristretto.Point, error) {
	if len(p)%elgamal.PointLen != 0 {
		return nil, fmt.Errorf("dataoram: %d bytes is not a list of group elements", len(p))
	}
	out := make([]ristretto.Point, len(p)/elgamal.PointLen)
	for i := range out {
		var b [elgamal.PointLen]byte
		copy(b[:], p[i*elgamal.PointLen:])
		if !out[i].SetBytes(&b) {
			return nil, fmt.Errorf("dataoram: element %d is not a ristretto255 encoding", i)
		}
	}
	return out, nil
}

func pointBytes(ps []ristretto.Point) []byte {
	out := make([]byte, 0, len(ps)*elgamal.PointLen)
	var b [elgamal.PointLen]byte
	for i := range ps {
		ps[i].BytesInto(&b)
		out = append(out, b[:]...)
	}
	return out
}

// parallel runs f(0), ..., f(n-1) on all CPUs, in contiguous ranges.
func parallel(n int, f func(i int)) {
	w := min(n, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k * n / w; i < (k+1)*n/w; i++ {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// DecryptServer2 is Server 2's step on the fetched block (its ElGamal ciphertexts): the
// message for Server 1 and the message for the client.
func DecryptServer2(k2 *elgamal.KeyShare, x1 *ristretto.Point, block []elgamal.Ciphertext, rnd io.Reader) (toServer1, toClient []byte, err error) {
	blinded := make([]ristretto.Point, len(block))
	e := make([]ristretto.Point, len(block))
	ts := make([]*ristretto.Scalar, len(block))
	for i := range ts {
		if ts[i], err = elgamal.RandomScalar(rnd); err != nil {
			return nil, nil, err
		}
	}
	parallel(len(block), func(i int) {
		var tg, tx ristretto.Point
		tg.ScalarMultBase(ts[i])
		tx.ScalarMult(x1, ts[i])
		blinded[i].Add(&block[i].R, &tg)
		d2 := k2.Partial(block[i])
		e[i].Sub(&block[i].C, &d2)
		e[i].Add(&e[i], &tx)
	})
	return pointBytes(blinded), pointBytes(e), nil
}

// DecryptServer1 is Server 1's step: its shares x1*R” for the client.
func DecryptServer1(k1 *elgamal.KeyShare, fromServer2 []byte) ([]byte, error) {
	rs, err := points(fromServer2)
	if err != nil {
		return nil, err
	}
	d := make([]ristretto.Point, len(rs))
	parallel(len(rs), func(i int) { d[i] = k1.Partial(elgamal.Ciphertext{R: rs[i]}) })
	return pointBytes(d), nil
}

// DecryptClient combines the two servers' messages into the block's plaintext.
func DecryptClient(fromServer1, fromServer2 []byte) ([]byte, error) {
	d, err := points(fromServer1)
	if err != nil {
		return nil, err
	}
	e, err := points(fromServer2)
	if err != nil {
		return nil, err
	}
	if len(d) != len(e) {
		return nil, fmt.Errorf("dataoram: %d and %d decryption shares", len(d), len(e))
	}
	out := make([]byte, 0, len(d)*elgamal.ChunkLen)
	for i := range d {
		var m ristretto.Point
		m.Sub(&e[i], &d[i])
		var chunk [elgamal.ChunkLen]byte
		if err := m.LizardInto(&chunk); err != nil {
			return nil, elgamal.ErrDecode
		}
		out = append(out, chunk[:]...)
	}
	return out, nil
}

// MarshalBlock and UnmarshalBlock encode a block's ciphertexts back to back.
func MarshalBlock(cts []elgamal.Ciphertext) []byte {
	out := make([]byte, 0, len(cts)*elgamal.CiphertextLen)
	for i := range cts {
		out = cts[i].AppendTo(out)
	}
	return out
}

// UnmarshalBlock is the inverse of MarshalBlock.
func UnmarshalBlock(p []byte) ([]elgamal.Ciphertext, error) {
	if len(p)%elgamal.CiphertextLen != 0 {
		return nil, fmt.Errorf("dataoram: block of %d bytes is not whole ciphertexts", len(p))
	}
	out := make([]elgamal.Ciphertext, len(p)/elgamal.CiphertextLen)
	for i := range out {
		ct, err := elgamal.UnmarshalCiphertext(p[i*elgamal.CiphertextLen : (i+1)*elgamal.CiphertextLen])
		if err != nil {
			return nil, fmt.Errorf("dataoram: ciphertext %d: %w", i, err)
		}
		out[i] = ct
	}
	return out, nil
}
