package oprf

import (
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"io"

	"github.com/cloudflare/circl/blindsign/blindrsa"
)

// MinRSABits is the smallest RSA modulus accepted anywhere (keys, pinned public keys).
const MinRSABits = 2048

// rsaVariant is the only RFC 9474 variant whose signatures are deterministic.
const rsaVariant = blindrsa.SHA384PSSZeroDeterministic

type rsaPrivate struct {
	sk     *rsa.PrivateKey
	signer blindrsa.Signer
	pub    *rsaPublic
}

type rsaPublic struct {
	pk  *rsa.PublicKey
	cli blindrsa.Client
	raw []byte
	id  KeyID
}

func generateRSA(rnd io.Reader, bits int) (PrivateKey, error) {
	if bits == 0 {
		bits = MinRSABits
	}
	if bits < MinRSABits {
		return nil, fmt.Errorf("rsa key of %d bits: at least %d required", bits, MinRSABits)
	}
	sk, err := rsa.GenerateKey(rnd, bits)
	if err != nil {
		return nil, fmt.Errorf("generate rsa key: %w", err)
	}
	return newRSAPrivate(sk)
}

func parseRSAPrivate(b []byte) (PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: rsa private key: %v", ErrFormat, err)
	}
	sk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: private key is not RSA", ErrFormat)
	}
	return newRSAPrivate(sk)
}

func newRSAPrivate(sk *rsa.PrivateKey) (PrivateKey, error) {
	raw, err := x509.MarshalPKIXPublicKey(&sk.PublicKey)
	if err != nil {
		return nil, err
	}
	pub, err := parseRSAPublic(raw)
	if err != nil {
		return nil, err
	}
	sk.Precompute()
	return &rsaPrivate{sk: sk, signer: blindrsa.NewSigner(sk), pub: pub.(*rsaPublic)}, nil
}

func parseRSAPublic(b []byte) (PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: rsa public key: %v", ErrFormat, err)
	}
	pk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: public key is not RSA", ErrFormat)
	}
	if pk.N.BitLen() < MinRSABits {
		return nil, fmt.Errorf("%w: rsa key of %d bits, at least %d required", ErrFormat, pk.N.BitLen(), MinRSABits)
	}
	cli, err := blindrsa.NewClient(rsaVariant, pk)
	if err != nil {
		return nil, err
	}
	raw := append([]byte(nil), b...)
	return &rsaPublic{pk: pk, cli: cli, raw: raw, id: keyIDOf(RSA, raw)}, nil
}

func (k *rsaPrivate) Suite() SuiteID                 { return RSA }
func (k *rsaPrivate) ID() KeyID                      { return k.pub.id }
func (k *rsaPrivate) Public() PublicKey              { return k.pub }
func (k *rsaPrivate) MarshalBinary() ([]byte, error) { return x509.MarshalPKCS8PrivateKey(k.sk) }

func (k *rsaPrivate) Evaluate(blinded [][]byte) ([][]byte, []byte, error) {
	if len(blinded) == 0 {
		return nil, nil, fmt.Errorf("%w: empty batch", ErrFormat)
	}
	out := make([][]byte, len(blinded))
	for i, b := range blinded {
		if len(b) != k.pub.ElementSize() {
			return nil, nil, fmt.Errorf("%w: blinded element %d is %d bytes, want %d", ErrFormat, i, len(b), k.pub.ElementSize())
		}
		s, err := k.signer.BlindSign(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: blinded element %d: %v", ErrFormat, i, err)
		}
		out[i] = s
	}
	return out, nil, nil
}

func (p *rsaPublic) Suite() SuiteID                 { return RSA }
func (p *rsaPublic) ID() KeyID                      { return p.id }
func (p *rsaPublic) ElementSize() int               { return p.pk.Size() }
func (p *rsaPublic) ProofSize() int                 { return 0 }
func (p *rsaPublic) MarshalBinary() ([]byte, error) { return append([]byte(nil), p.raw...), nil }

func (p *rsaPublic) Blind(rnd io.Reader, inputs [][]byte) (*Blinded, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrFormat)
	}
	states := make([]blindrsa.State, len(inputs))
	b := &Blinded{Elements: make([][]byte, len(inputs)), state: states}
	for i, in := range inputs {
		msg, err := p.cli.Prepare(rnd, in)
		if err != nil {
			return nil, fmt.Errorf("blind: %w", err)
		}
		if b.Elements[i], states[i], err = p.cli.Blind(rnd, msg); err != nil {
			return nil, fmt.Errorf("blind: %w", err)
		}
	}
	return b, nil
}

// Finalize unblinds each signature; circl verifies it against the pinned key.
func (p *rsaPublic) Finalize(b *Blinded, evals [][]byte, proof []byte) ([][KeySize]byte, error) {
	states, ok := b.state.([]blindrsa.State)
	if !ok || len(evals) != len(states) {
		return nil, fmt.Errorf("%w: %d evaluations for %d inputs", ErrVerify, len(evals), len(b.Elements))
	}
	if len(proof) != 0 {
		return nil, fmt.Errorf("%w: unexpected %d-byte proof", ErrVerify, len(proof))
	}
	keys := make([][KeySize]byte, len(evals))
	for i, e := range evals {
		sig, err := p.cli.Finalize(states[i], e)
		if err != nil {
			return nil, fmt.Errorf("%w: signature %d: %v", ErrVerify, i, err)
		}
		keys[i] = deriveKey(RSA, p.id, sig)
	}
	return keys, nil
}
