package oprf

import (
	"crypto"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"io"

	"github.com/cloudflare/circl/expander"
)

// The RFC 9497 VOPRF, mode 0x01, suite ristretto255-SHA512, composed from the RFC 9496
// group of github.com/oasisprotocol/curve25519-voi (group.go) and RFC 9380's
// expand_message_xmd from circl. It computes exactly what circl/oprf computes
// (tests check it against circl and the RFC's vectors) but uses variable-time
// multi-scalar multiplication for the public-only parts of the batched DLEQ proof (the
// composites M and Z, and the verifier's t2 and t3), which circl does one scalar
// multiplication at a time: batches cost about a third of circl's time on each side.
// Secret scalars (the key, blinds, proof nonces) only ever meet constant-time operations.

// contextString is RFC 9497's "OPRFV1-" || I2OSP(mode, 1) || "-" || identifier.
const contextString = "OPRFV1-\x01-ristretto255-SHA512"

var (
	hashToGroupDST  = []byte("HashToGroup-" + contextString)
	hashToScalarDST = []byte("HashToScalar-" + contextString)
	seedDST         = []byte("Seed-" + contextString)
)

var errIdentity = errors.New("identity element")

// expand is expand_message_xmd with SHA-512 to 64 bytes (RFC 9380, section 5.3.1).
func expand(msg, dst []byte) []byte {
	return expander.NewExpanderMD(crypto.SHA512, dst).Expand(msg, 64)
}

// hashToGroup is RFC 9497's HashToGroup: RFC 9380's hash_to_ristretto255.
func hashToGroup(msg []byte) *element {
	return elementFromUniform(expand(msg, hashToGroupDST))
}

// hashToScalar maps msg to a scalar: expand to 64 bytes, read little-endian, reduce.
func hashToScalar(msg, dst []byte) *scal {
	return scalarFromUniform(expand(msg, dst))
}

// randomScalar draws a non-zero scalar from 64 bytes of rnd.
func randomScalar(rnd io.Reader, dst []byte) (*scal, error) {
	buf := make([]byte, 64)
	for {
		if _, err := io.ReadFull(rnd, buf); err != nil {
			return nil, err
		}
		if s := hashToScalar(buf, dst); !isZero(s) {
			return s, nil
		}
	}
}

// appendFramed appends I2OSP(len(b), 2) || b.
func appendFramed(dst, b []byte) []byte {
	return append(binary.BigEndian.AppendUint16(dst, uint16(len(b))), b...)
}

// compositeScalars are the d_i of RFC 9497's ComputeComposites for public key B and the
// blinded (C) and evaluated (D) elements, given in their encodings.
func compositeScalars(pkEnc []byte, cs, ds [][]byte) []*scal {
	seedTranscript := appendFramed(appendFramed(nil, pkEnc), seedDST)
	seed := sha512.Sum512(seedTranscript)
	out := make([]*scal, len(cs))
	buf := make([]byte, 0, 2+64+2+2+32+2+32+9)
	for i := range cs {
		t := appendFramed(buf[:0], seed[:])
		t = binary.BigEndian.AppendUint16(t, uint16(i))
		t = appendFramed(t, cs[i])
		t = appendFramed(t, ds[i])
		t = append(t, "Composite"...)
		out[i] = hashToScalar(t, hashToScalarDST)
	}
	return out
}

// challenge is RFC 9497's challenge scalar over B, M, Z, t2 and t3.
func challenge(pkEnc []byte, m, z, t2, t3 *element) *scal {
	t := appendFramed(nil, pkEnc)
	for _, e := range []*element{m, z, t2, t3} {
		t = appendFramed(t, encode(e))
	}
	return hashToScalar(append(t, "Challenge"...), hashToScalarDST)
}

// prove is RFC 9497's GenerateProof with A = the generator and B = k*A, for the blinded
// elements cs (decoded in cEls) and their evaluations ds. It returns c || s.
// r is the proof's secret nonce, fresh for every proof.
func prove(k *scal, pkEnc []byte, cEls, dEls []*element, cs, ds [][]byte, r *scal) []byte {
	d := compositeScalars(pkEnc, cs, ds)
	m := newElement().MultiscalarMulVartime(d, cEls) // public inputs only
	z := newElement()
	if len(dEls) <= 4 {
		// Z = sum d_i*D_i, over public values: cheaper than k*M for small batches.
		z.MultiscalarMulVartime(d, dEls)
	} else {
		z.Mul(m, k) // RFC 9497's ComputeCompositesFast
	}
	t2 := baseMult(r)
	t3 := newElement().Mul(m, r)
	c := challenge(pkEnc, m, z, t2, t3)
	s := newScalar().Sub(r, newScalar().Mul(c, k))
	return appendScalar(appendScalar(make([]byte, 0, 64), c), s)
}

// verify is RFC 9497's VerifyProof with A = the generator and B = pk (tab, if not nil,
// holds pk's expanded form).
func verify(pk *element, tab *pkTables, pkEnc []byte, cEls, dEls []*element, cs, ds [][]byte, proof []byte) bool {
	if len(proof) != 64 {
		return false
	}
	c, okC := decodeScalar(proof[:32])
	s, okS := decodeScalar(proof[32:])
	if !okC || !okS {
		return false
	}
	d := compositeScalars(pkEnc, cs, ds)
	m := newElement().MultiscalarMulVartime(d, cEls)
	z := newElement().MultiscalarMulVartime(d, dEls)
	t2 := newElement() // c*B + s*G
	if tab != nil {
		t2.ExpandedDoubleScalarMulBasepointVartime(c, tab.expanded, s)
	} else {
		t2.DoubleScalarMulBasepointVartime(c, pk, s)
	}
	t3 := newElement().MultiscalarMulVartime([]*scal{s, c}, []*element{m, z}) // s*M + c*Z
	return challenge(pkEnc, m, z, t2, t3).Equal(c) == 1
}

// finalizeHash is RFC 9497's Finalize hash over the input and the unblinded element.
func finalizeHash(input []byte, n *element) []byte {
	t := appendFramed(appendFramed(nil, input), encode(n))
	h := sha512.Sum512(append(t, "Finalize"...))
	return h[:]
}
