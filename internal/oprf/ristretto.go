package oprf

import (
	"fmt"
	"io"

	"github.com/cloudflare/circl/group"
	circl "github.com/cloudflare/circl/oprf"
	"github.com/cloudflare/circl/zk/dleq"
)

var (
	r255       = circl.SuiteRistretto255
	r255Group  = group.Ristretto255
	r255Elem   = 32
	r255Proof  = 64
	blindDST   = []byte("veil-ks-v1 blind")
	keySeedDST = []byte("veil-ks-v1 ristretto255 key")
)

type r255Private struct {
	k   *circl.PrivateKey
	srv circl.VerifiableServer
	pub *r255Public
}

type r255Public struct {
	pk  *circl.PublicKey
	cli circl.VerifiableClient
	raw []byte
	id  KeyID
}

func generateR255(rnd io.Reader) (PrivateKey, error) {
	seed := make([]byte, 32)
	if _, err := io.ReadFull(rnd, seed); err != nil {
		return nil, fmt.Errorf("generate ristretto255 key: %w", err)
	}
	k, err := circl.DeriveKey(r255, circl.VerifiableMode, seed, keySeedDST)
	if err != nil {
		return nil, fmt.Errorf("generate ristretto255 key: %w", err)
	}
	return newR255Private(k)
}

func parseR255Private(b []byte) (PrivateKey, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("%w: ristretto255 private key is %d bytes, want 32", ErrFormat, len(b))
	}
	k := new(circl.PrivateKey)
	if err := k.UnmarshalBinary(r255, b); err != nil {
		return nil, fmt.Errorf("%w: ristretto255 private key: %v", ErrFormat, err)
	}
	return newR255Private(k)
}

func newR255Private(k *circl.PrivateKey) (PrivateKey, error) {
	raw, err := k.Public().MarshalBinary()
	if err != nil {
		return nil, err
	}
	pub, err := parseR255Public(raw)
	if err != nil {
		return nil, err
	}
	return &r255Private{k: k, srv: circl.NewVerifiableServer(r255, k), pub: pub.(*r255Public)}, nil
}

func parseR255Public(b []byte) (PublicKey, error) {
	if _, err := parseElement(b); err != nil {
		return nil, fmt.Errorf("ristretto255 public key: %w", err)
	}
	pk := new(circl.PublicKey)
	if err := pk.UnmarshalBinary(r255, b); err != nil {
		return nil, fmt.Errorf("%w: ristretto255 public key: %v", ErrFormat, err)
	}
	raw := append([]byte(nil), b...)
	return &r255Public{pk: pk, cli: circl.NewVerifiableClient(r255, pk), raw: raw, id: keyIDOf(Ristretto255, raw)}, nil
}

// parseElement decodes one canonical, non-identity ristretto255 element.
func parseElement(b []byte) (group.Element, error) {
	if len(b) != r255Elem {
		return nil, fmt.Errorf("%w: element is %d bytes, want %d", ErrFormat, len(b), r255Elem)
	}
	e := r255Group.NewElement()
	if err := e.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: not a ristretto255 element", ErrFormat)
	}
	if e.IsIdentity() {
		return nil, fmt.Errorf("%w: identity element", ErrFormat)
	}
	return e, nil
}

func (k *r255Private) Suite() SuiteID                 { return Ristretto255 }
func (k *r255Private) ID() KeyID                      { return k.pub.id }
func (k *r255Private) Public() PublicKey              { return k.pub }
func (k *r255Private) MarshalBinary() ([]byte, error) { return k.k.MarshalBinary() }

func (k *r255Private) Evaluate(blinded [][]byte) ([][]byte, []byte, error) {
	if len(blinded) == 0 {
		return nil, nil, fmt.Errorf("%w: empty batch", ErrFormat)
	}
	req := &circl.EvaluationRequest{Elements: make([]circl.Blinded, len(blinded))}
	for i, b := range blinded {
		e, err := parseElement(b)
		if err != nil {
			return nil, nil, fmt.Errorf("blinded element %d: %w", i, err)
		}
		req.Elements[i] = e
	}
	ev, err := k.srv.Evaluate(req)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluate: %w", err)
	}
	out := make([][]byte, len(ev.Elements))
	for i, e := range ev.Elements {
		if out[i], err = e.MarshalBinaryCompress(); err != nil {
			return nil, nil, err
		}
	}
	proof, err := ev.Proof.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	return out, proof, nil
}

func (p *r255Public) Suite() SuiteID                 { return Ristretto255 }
func (p *r255Public) ID() KeyID                      { return p.id }
func (p *r255Public) ElementSize() int               { return r255Elem }
func (p *r255Public) ProofSize() int                 { return r255Proof }
func (p *r255Public) MarshalBinary() ([]byte, error) { return append([]byte(nil), p.raw...), nil }

// Blind draws each blind as HashToScalar(64 bytes of rnd) (circl's RandomScalar ignores its
// reader for ristretto255, so this is how randomness is injected) and blinds with circl.
func (p *r255Public) Blind(rnd io.Reader, inputs [][]byte) (*Blinded, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrFormat)
	}
	blinds := make([]circl.Blind, len(inputs))
	buf := make([]byte, 64)
	for i := range blinds {
		for {
			if _, err := io.ReadFull(rnd, buf); err != nil {
				return nil, fmt.Errorf("blind: %w", err)
			}
			s := r255Group.HashToScalar(buf, blindDST)
			if !s.IsZero() {
				blinds[i] = s
				break
			}
		}
	}
	fin, req, err := p.cli.DeterministicBlind(inputs, blinds)
	if err != nil {
		return nil, fmt.Errorf("blind: %w", err)
	}
	b := &Blinded{Elements: make([][]byte, len(inputs)), state: fin}
	for i, e := range req.Elements {
		if b.Elements[i], err = e.MarshalBinaryCompress(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (p *r255Public) Finalize(b *Blinded, evals [][]byte, proof []byte) ([][KeySize]byte, error) {
	fin, ok := b.state.(*circl.FinalizeData)
	if !ok || len(evals) != len(b.Elements) {
		return nil, fmt.Errorf("%w: %d evaluations for %d inputs", ErrVerify, len(evals), len(b.Elements))
	}
	ev := &circl.Evaluation{Elements: make([]circl.Evaluated, len(evals)), Proof: new(dleq.Proof)}
	for i, e := range evals {
		el, err := parseElement(e)
		if err != nil {
			return nil, fmt.Errorf("%w: evaluation %d: %v", ErrVerify, i, err)
		}
		ev.Elements[i] = el
	}
	if len(proof) != r255Proof {
		return nil, fmt.Errorf("%w: proof is %d bytes, want %d", ErrVerify, len(proof), r255Proof)
	}
	if err := ev.Proof.UnmarshalBinary(r255Group, proof); err != nil {
		return nil, fmt.Errorf("%w: proof: %v", ErrVerify, err)
	}
	outs, err := p.cli.Finalize(fin, ev)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVerify, err)
	}
	keys := make([][KeySize]byte, len(outs))
	for i, o := range outs {
		keys[i] = deriveKey(Ristretto255, p.id, o)
	}
	return keys, nil
}
