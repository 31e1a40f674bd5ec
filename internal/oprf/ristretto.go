package oprf

import (
	"crypto/rand"
	"fmt"
	"io"
	"sync/atomic"

	circl "github.com/cloudflare/circl/oprf"
	"github.com/oasisprotocol/curve25519-voi/curve"
)

// maxBatch is the most elements one proof covers: RFC 9497 frames the index in 2 bytes.
const maxBatch = 1<<16 - 1

var (
	r255Elem   = 32
	r255Proof  = 64
	blindDST   = []byte("veil-ks-v1 blind")
	keySeedDST = []byte("veil-ks-v1 ristretto255 key")
)

type r255Private struct {
	k   *scal
	raw []byte
	pub *r255Public
}

type r255Public struct {
	pk  *element
	raw []byte
	id  KeyID

	tab atomic.Pointer[pkTables] // built by the first batch of tableMin or more
}

// pkTables are pk's table for constant-time fixed-base multiplication (unblinding) and
// its expanded form for the verifier's variable-time c*pk + s*G. Building them costs ~3
// variable-base multiplications; they save ~3/4 of one per element.
type pkTables struct {
	table    *curve.RistrettoBasepointTable
	expanded *curve.ExpandedRistrettoPoint
}

// tableMin is the smallest batch that builds pk's tables (a lone put's batch of one does
// not: it would cost more than it saves).
const tableMin = 4

// r255State is what a client keeps of a blinded batch to finalize it.
type r255State struct {
	inputs  [][]byte
	blinds  []*scal
	blinded []*element // HashToGroup(input) + blind*G (Blind)
}

// generateR255 derives the key from 32 bytes of rnd with RFC 9497's DeriveKeyPair
// (circl), so a key directory's key is a function of its seed.
func generateR255(rnd io.Reader) (PrivateKey, error) {
	seed := make([]byte, 32)
	if _, err := io.ReadFull(rnd, seed); err != nil {
		return nil, fmt.Errorf("generate ristretto255 key: %w", err)
	}
	k, err := circl.DeriveKey(circl.SuiteRistretto255, circl.VerifiableMode, seed, keySeedDST)
	if err != nil {
		return nil, fmt.Errorf("generate ristretto255 key: %w", err)
	}
	raw, err := k.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return parseR255Private(raw)
}

func parseR255Private(b []byte) (PrivateKey, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("%w: ristretto255 private key is %d bytes, want 32", ErrFormat, len(b))
	}
	k, ok := decodeScalar(b)
	if !ok {
		return nil, fmt.Errorf("%w: ristretto255 private key: not a canonical scalar", ErrFormat)
	}
	if isZero(k) {
		return nil, fmt.Errorf("%w: ristretto255 private key is zero", ErrFormat)
	}
	pub, err := parseR255Public(encode(baseMult(k)))
	if err != nil {
		return nil, err
	}
	return &r255Private{k: k, raw: append([]byte(nil), b...), pub: pub.(*r255Public)}, nil
}

func parseR255Public(b []byte) (PublicKey, error) {
	pk, err := parseElement(b)
	if err != nil {
		return nil, fmt.Errorf("ristretto255 public key: %w", err)
	}
	raw := append([]byte(nil), b...)
	return &r255Public{pk: pk, raw: raw, id: keyIDOf(Ristretto255, raw)}, nil
}

// parseElement decodes one canonical, non-identity ristretto255 element.
func parseElement(b []byte) (*element, error) {
	if len(b) != r255Elem {
		return nil, fmt.Errorf("%w: element is %d bytes, want %d", ErrFormat, len(b), r255Elem)
	}
	e, ok := decodeElement(b)
	if !ok {
		return nil, fmt.Errorf("%w: not a ristretto255 element", ErrFormat)
	}
	if isIdentity(e) {
		return nil, fmt.Errorf("%w: %v", ErrFormat, errIdentity)
	}
	return e, nil
}

func (k *r255Private) Suite() SuiteID                 { return Ristretto255 }
func (k *r255Private) ID() KeyID                      { return k.pub.id }
func (k *r255Private) Public() PublicKey              { return k.pub }
func (k *r255Private) MarshalBinary() ([]byte, error) { return append([]byte(nil), k.raw...), nil }

// Evaluate is RFC 9497's BlindEvaluate (VOPRF): each element times the key, and one
// batched DLEQ proof that all of them used the key behind the public key.
func (k *r255Private) Evaluate(blinded [][]byte) ([][]byte, []byte, error) {
	r, err := randomScalar(rand.Reader, hashToScalarDST)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluate: %w", err)
	}
	return k.evaluate(blinded, r)
}

// evaluate is Evaluate with the proof nonce r given (RFC 9497's vectors fix it).
func (k *r255Private) evaluate(blinded [][]byte, r *scal) ([][]byte, []byte, error) {
	if len(blinded) == 0 || len(blinded) > maxBatch {
		return nil, nil, fmt.Errorf("%w: batch of %d (1 to %d)", ErrFormat, len(blinded), maxBatch)
	}
	cEls := make([]*element, len(blinded))
	dEls := make([]*element, len(blinded))
	out := make([][]byte, len(blinded))
	for i, b := range blinded {
		e, err := parseElement(b)
		if err != nil {
			return nil, nil, fmt.Errorf("blinded element %d: %w", i, err)
		}
		cEls[i], dEls[i] = e, newElement().Mul(e, k.k)
		out[i] = encode(dEls[i])
	}
	return out, prove(k.k, k.pub.raw, cEls, dEls, blinded, out, r), nil
}

func (p *r255Public) Suite() SuiteID                 { return Ristretto255 }
func (p *r255Public) ID() KeyID                      { return p.id }
func (p *r255Public) ElementSize() int               { return r255Elem }
func (p *r255Public) ProofSize() int                 { return r255Proof }
func (p *r255Public) MarshalBinary() ([]byte, error) { return append([]byte(nil), p.raw...), nil }

// Blind draws each blind r as HashToScalar(64 bytes of rnd) under blindDST and sends
// HashToGroup(input) + r*G: additive blinding (docs/security.md, "The key server's
// evaluation"). The element is uniform whatever the input, as with RFC 9497's r*H(input);
// the server's answer k*H(input) + r*pk is unblinded by subtracting r*pk, so the outputs
// are RFC 9497's, byte for byte. It needs the pinned public key, which verifiable mode
// has, and both of its multiplications are by fixed points (G, pk): ~4x cheaper than the
// RFC's multiplication of a fresh point by r and by 1/r.
func (p *r255Public) Blind(rnd io.Reader, inputs [][]byte) (*Blinded, error) {
	if len(inputs) == 0 || len(inputs) > maxBatch {
		return nil, fmt.Errorf("%w: batch of %d (1 to %d)", ErrFormat, len(inputs), maxBatch)
	}
	st := &r255State{inputs: inputs, blinds: make([]*scal, len(inputs)), blinded: make([]*element, len(inputs))}
	b := &Blinded{Elements: make([][]byte, len(inputs)), state: st}
	for i, in := range inputs {
		r, err := randomScalar(rnd, blindDST)
		if err != nil {
			return nil, fmt.Errorf("blind: %w", err)
		}
		e := baseMult(r)
		e.Add(e, hashToGroup(in))
		if isIdentity(e) { // r*G = -H(input): probability 2^-252
			return nil, fmt.Errorf("blind: input %d: %w", i, errIdentity)
		}
		st.blinds[i], st.blinded[i], b.Elements[i] = r, e, encode(e)
	}
	return b, nil
}

// tables returns pk's tables, building them for a batch of n >= tableMin; nil while
// they are not built and n is smaller. Two batches may both build them: either result
// serves.
func (p *r255Public) tables(n int) *pkTables {
	if t := p.tab.Load(); t != nil || n < tableMin {
		return t
	}
	t := &pkTables{table: curve.NewRistrettoBasepointTable(p.pk), expanded: curve.NewExpandedRistrettoPoint(p.pk)}
	p.tab.Store(t)
	return t
}

// Finalize verifies the batch proof, unblinds each evaluation and hashes it with its
// input (RFC 9497's Finalize), then derives veil's key from the output.
func (p *r255Public) Finalize(b *Blinded, evals [][]byte, proof []byte) ([][KeySize]byte, error) {
	outs, err := p.outputs(b, evals, proof)
	if err != nil {
		return nil, err
	}
	keys := make([][KeySize]byte, len(outs))
	for i, o := range outs {
		keys[i] = deriveKey(Ristretto255, p.id, o)
	}
	return keys, nil
}

// outputs is RFC 9497's Finalize: the 64-byte PRF outputs of a verified batch.
func (p *r255Public) outputs(b *Blinded, evals [][]byte, proof []byte) ([][]byte, error) {
	st, ok := b.state.(*r255State)
	if !ok || len(evals) != len(b.Elements) || len(evals) != len(st.blinded) {
		return nil, fmt.Errorf("%w: %d evaluations for %d inputs", ErrVerify, len(evals), len(b.Elements))
	}
	dEls := make([]*element, len(evals))
	for i, e := range evals {
		el, err := parseElement(e)
		if err != nil {
			return nil, fmt.Errorf("%w: evaluation %d: %v", ErrVerify, i, err)
		}
		dEls[i] = el
	}
	if len(proof) != r255Proof {
		return nil, fmt.Errorf("%w: proof is %d bytes, want %d", ErrVerify, len(proof), r255Proof)
	}
	tab := p.tables(len(evals))
	if !verify(p.pk, tab, p.raw, st.blinded, dEls, b.Elements, evals, proof) {
		return nil, fmt.Errorf("%w: proof does not verify against the pinned key", ErrVerify)
	}
	outs := make([][]byte, len(evals))
	for i, d := range dEls {
		var rpk *element // r*pk, constant-time: r is secret
		if tab != nil {
			rpk = newElement().MulBasepoint(tab.table, st.blinds[i])
		} else {
			rpk = newElement().Mul(p.pk, st.blinds[i])
		}
		outs[i] = finalizeHash(st.inputs[i], rpk.Sub(d, rpk))
	}
	return outs, nil
}
