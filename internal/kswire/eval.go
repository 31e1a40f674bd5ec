package kswire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/veil-project/veil/internal/oprf"
)

// Version is the version byte that starts every message.
const Version = 1

// MaxBatch is the largest number of elements one message may carry.
const MaxBatch = 4096

// MaxElementSize bounds one element (an RSA-8192 element is 1,024 bytes).
const MaxElementSize = 1024

// ErrMalformed reports bytes that are not a well-formed message of this version.
var ErrMalformed = errors.New("kswire: malformed message")

// headerSize is version, suite, key id and count.
const headerSize = 1 + 1 + 8 + 2

// Request asks for the evaluation of a batch of blinded elements under one key.
type Request struct {
	Suite    oprf.SuiteID
	KeyID    oprf.KeyID
	Elements [][]byte // all of one size
}

// Response answers a Request: one evaluation per element, then the suite's proof.
type Response struct {
	Suite oprf.SuiteID
	KeyID oprf.KeyID
	Evals [][]byte
	Proof []byte
}

func putHeader(b []byte, s oprf.SuiteID, id oprf.KeyID, n int) []byte {
	b = append(b, Version, byte(s))
	b = append(b, id[:]...)
	return binary.BigEndian.AppendUint16(b, uint16(n))
}

func checkBatch(elems [][]byte) (int, error) {
	if len(elems) == 0 || len(elems) > MaxBatch {
		return 0, fmt.Errorf("%w: batch of %d elements (want 1..%d)", ErrMalformed, len(elems), MaxBatch)
	}
	size := len(elems[0])
	if size == 0 || size > MaxElementSize {
		return 0, fmt.Errorf("%w: element of %d bytes", ErrMalformed, size)
	}
	for _, e := range elems {
		if len(e) != size {
			return 0, fmt.Errorf("%w: elements of different sizes", ErrMalformed)
		}
	}
	return size, nil
}

// AppendRequest appends r's encoding to b.
func AppendRequest(b []byte, r *Request) ([]byte, error) {
	if _, err := checkBatch(r.Elements); err != nil {
		return nil, err
	}
	b = putHeader(b, r.Suite, r.KeyID, len(r.Elements))
	for _, e := range r.Elements {
		b = append(b, e...)
	}
	return b, nil
}

func parseHeader(b []byte) (oprf.SuiteID, oprf.KeyID, int, error) {
	var id oprf.KeyID
	if len(b) < headerSize {
		return 0, id, 0, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrMalformed, len(b), headerSize)
	}
	if b[0] != Version {
		return 0, id, 0, fmt.Errorf("%w: version %d, want %d", ErrMalformed, b[0], Version)
	}
	s := oprf.SuiteID(b[1])
	if s != oprf.Ristretto255 && s != oprf.RSA {
		return 0, id, 0, fmt.Errorf("%w: unknown suite %d", ErrMalformed, b[1])
	}
	copy(id[:], b[2:10])
	n := int(binary.BigEndian.Uint16(b[10:12]))
	if n == 0 || n > MaxBatch {
		return 0, id, 0, fmt.Errorf("%w: batch of %d elements (want 1..%d)", ErrMalformed, n, MaxBatch)
	}
	return s, id, n, nil
}

// ParseRequest decodes a request. The element size is the body length over the count;
// the caller checks it against the key the request names.
func ParseRequest(b []byte) (*Request, error) {
	s, id, n, err := parseHeader(b)
	if err != nil {
		return nil, err
	}
	body := b[headerSize:]
	if len(body)%n != 0 || len(body)/n == 0 || len(body)/n > MaxElementSize {
		return nil, fmt.Errorf("%w: %d body bytes do not split into %d elements", ErrMalformed, len(body), n)
	}
	return &Request{Suite: s, KeyID: id, Elements: split(body, n, len(body)/n)}, nil
}

// split cuts n elements of size bytes, copying them out of the caller's buffer.
func split(body []byte, n, size int) [][]byte {
	out := make([][]byte, n)
	cp := append([]byte(nil), body[:n*size]...)
	for i := range out {
		out[i] = cp[i*size : (i+1)*size : (i+1)*size]
	}
	return out
}

// AppendResponse appends r's encoding to b.
func AppendResponse(b []byte, r *Response) ([]byte, error) {
	if _, err := checkBatch(r.Evals); err != nil {
		return nil, err
	}
	b = putHeader(b, r.Suite, r.KeyID, len(r.Evals))
	for _, e := range r.Evals {
		b = append(b, e...)
	}
	return append(b, r.Proof...), nil
}

// ParseResponse decodes a response to a request for n elements under the pinned key pub.
// Everything must match: suite, key id, count, element and proof sizes.
func ParseResponse(b []byte, pub oprf.PublicKey, n int) (*Response, error) {
	s, id, got, err := parseHeader(b)
	if err != nil {
		return nil, err
	}
	if s != pub.Suite() || id != pub.ID() {
		return nil, fmt.Errorf("%w: answer for key %s/%s, asked %s/%s", ErrMalformed, s, id, pub.Suite(), pub.ID())
	}
	if got != n {
		return nil, fmt.Errorf("%w: %d evaluations for %d elements", ErrMalformed, got, n)
	}
	size, proof := pub.ElementSize(), pub.ProofSize()
	if want := headerSize + n*size + proof; len(b) != want {
		return nil, fmt.Errorf("%w: response is %d bytes, want %d", ErrMalformed, len(b), want)
	}
	body := b[headerSize:]
	return &Response{Suite: s, KeyID: id, Evals: split(body, n, size),
		Proof: append([]byte(nil), body[n*size:]...)}, nil
}
