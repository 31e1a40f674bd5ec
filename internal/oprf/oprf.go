package oprf

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// KeySize is the size of a derived key in bytes.
const KeySize = 32

// Errors callers branch on.
var (
	// ErrVerify reports an evaluation that does not verify against the pinned public key:
	// a wrong or tampered answer from the key server.
	ErrVerify = errors.New("oprf: evaluation does not verify")
	// ErrFormat reports malformed key, element or proof bytes.
	ErrFormat = errors.New("oprf: malformed input")
	// ErrSuite reports an unknown suite name or id.
	ErrSuite = errors.New("oprf: unknown suite")
)

// SuiteID is the one-byte suite identifier used on the wire.
type SuiteID byte

// The suites.
const (
	Ristretto255 SuiteID = 1 // RFC 9497 VOPRF ristretto255-SHA512 (default)
	RSA          SuiteID = 2 // RFC 9474 RSABSSA-SHA384-PSSZERO-Deterministic
)

// String returns the suite's name as used in flags and files.
func (s SuiteID) String() string {
	switch s {
	case Ristretto255:
		return "ristretto255"
	case RSA:
		return "rsa"
	}
	return fmt.Sprintf("suite(%d)", byte(s))
}

// ParseSuite maps a name ("ristretto255", "rsa") to its id.
func ParseSuite(name string) (SuiteID, error) {
	switch name {
	case "ristretto255", "":
		return Ristretto255, nil
	case "rsa":
		return RSA, nil
	}
	return 0, fmt.Errorf("%w %q (want ristretto255 or rsa)", ErrSuite, name)
}

// KeyID names one key server key.
type KeyID [8]byte

// String is the hex form used in files and logs.
func (id KeyID) String() string { return hex.EncodeToString(id[:]) }

// ParseKeyID parses the hex form.
func ParseKeyID(s string) (KeyID, error) {
	var id KeyID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%w: key id %q is not 16 hex digits", ErrFormat, s)
	}
	copy(id[:], b)
	return id, nil
}

func keyIDOf(s SuiteID, public []byte) KeyID {
	h := sha256.New()
	h.Write([]byte("veil-ks-v1 keyid"))
	h.Write([]byte{byte(s)})
	h.Write(public)
	var id KeyID
	copy(id[:], h.Sum(nil))
	return id
}

// deriveKey is the output step shared by both suites.
func deriveKey(s SuiteID, id KeyID, output []byte) [KeySize]byte {
	m := hmac.New(sha256.New, []byte("veil-ks-v1 key"))
	m.Write([]byte{byte(s)})
	m.Write(id[:])
	m.Write(output)
	var k [KeySize]byte
	copy(k[:], m.Sum(nil))
	return k
}

// PrivateKey is the key server's side of one key.
type PrivateKey interface {
	Suite() SuiteID
	ID() KeyID
	Public() PublicKey
	// Evaluate answers a batch of blinded elements; proof is empty for suites that
	// verify each element on its own (rsa).
	Evaluate(blinded [][]byte) (evals [][]byte, proof []byte, err error)
	// MarshalBinary encodes the secret key (kept only in the key server's directory).
	MarshalBinary() ([]byte, error)
}

// PublicKey is the client's pinned view of one key.
type PublicKey interface {
	Suite() SuiteID
	ID() KeyID
	// ElementSize is the size of one blinded element and of one evaluation.
	ElementSize() int
	// ProofSize is the size of the proof that follows a batch of evaluations.
	ProofSize() int
	// Blind blinds a batch of inputs with randomness from rnd.
	Blind(rnd io.Reader, inputs [][]byte) (*Blinded, error)
	// Finalize verifies the server's answer for b, unblinds it and derives one key per
	// input. Any verification failure is ErrVerify; nothing partial is returned.
	Finalize(b *Blinded, evals [][]byte, proof []byte) ([][KeySize]byte, error)
	// MarshalBinary encodes the public key (pinned in client credentials).
	MarshalBinary() ([]byte, error)
}

// Blinded is a blinded batch: Elements go to the server; the rest stays with the client.
type Blinded struct {
	Elements [][]byte
	state    any
}

// GenerateKey creates a new key for suite s from rnd (rsaBits is the RSA modulus size,
// ignored by ristretto255; 0 means 2048).
func GenerateKey(s SuiteID, rnd io.Reader, rsaBits int) (PrivateKey, error) {
	switch s {
	case Ristretto255:
		return generateR255(rnd)
	case RSA:
		return generateRSA(rnd, rsaBits)
	}
	return nil, fmt.Errorf("%w %d", ErrSuite, byte(s))
}

// ParsePrivateKey decodes a key written by PrivateKey.MarshalBinary.
func ParsePrivateKey(s SuiteID, b []byte) (PrivateKey, error) {
	switch s {
	case Ristretto255:
		return parseR255Private(b)
	case RSA:
		return parseRSAPrivate(b)
	}
	return nil, fmt.Errorf("%w %d", ErrSuite, byte(s))
}

// ParsePublicKey decodes a key written by PublicKey.MarshalBinary.
func ParsePublicKey(s SuiteID, b []byte) (PublicKey, error) {
	switch s {
	case Ristretto255:
		return parseR255Public(b)
	case RSA:
		return parseRSAPublic(b)
	}
	return nil, fmt.Errorf("%w %d", ErrSuite, byte(s))
}
