package mle

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"io"
)

// MLE is one scheme over one suite: the Param of the formal definition. The zero Rand
// means crypto/rand; tests inject a deterministic reader (RCE is the only randomized scheme).
type MLE struct {
	Suite  Suite
	Scheme Scheme
	Rand   io.Reader
}

// New returns the scheme over the default suite.
func New(s Scheme) *MLE { return &MLE{Suite: DefaultSuite, Scheme: s} }

func (m *MLE) check() error {
	if !m.Suite.valid() || !m.Scheme.valid() {
		return fmt.Errorf("%w: %v over %v", ErrFormat, m.Scheme, m.Suite)
	}
	return nil
}

func (m *MLE) rand() io.Reader {
	if m.Rand != nil {
		return m.Rand
	}
	return rand.Reader
}

// Hash returns H(M), the input of key derivation.
func (m *MLE) Hash(msg []byte) Digest { return Digest(m.Suite.Sum(msg)) }

// KeyGen is plain (local) MLE key generation, K = H(M). Server-aided key generation is
// Derive(H(M)) through a KeyDeriver; see Encrypt.
func (m *MLE) KeyGen(msg []byte) Key { return Key(m.Suite.Sum(msg)) }

// Enc encrypts msg under k and returns the ciphertext (header, body and trailer).
func (m *MLE) Enc(k Key, msg []byte) ([]byte, error) {
	return m.AppendEnc(make([]byte, 0, len(msg)+m.Scheme.Overhead()), k, msg)
}

// AppendEnc appends Enc(k, msg) to dst, reusing dst's capacity.
func (m *MLE) AppendEnc(dst []byte, k Key, msg []byte) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	out, body := grow(dst, HeaderSize+len(msg)+m.Scheme.trailer())
	body[0], body[1] = byte(m.Suite), byte(m.Scheme)
	ct := body[HeaderSize : HeaderSize+len(msg)]
	tr := body[HeaderSize+len(msg):]
	switch m.Scheme {
	case CE:
		xorCTR(k, ct, msg)
	case HCE1, HCE2:
		xorCTR(k, ct, msg)
		h := m.Suite.Sum(k[:])
		copy(tr, h[:])
	case RCE:
		var l Key
		if _, err := io.ReadFull(m.rand(), l[:]); err != nil {
			return nil, fmt.Errorf("mle: random key: %w", err)
		}
		xorCTR(l, ct, msg)
		m.rceTrailer(tr, l, k)
	}
	return out, nil
}

// rceTrailer writes L^K || H(K).
func (m *MLE) rceTrailer(tr []byte, l, k Key) {
	subtle.XORBytes(tr[:Size], l[:], k[:])
	h := m.Suite.Sum(k[:])
	copy(tr[Size:], h[:])
}

// TagGen returns the tag of a ciphertext: H(C) for CE, the embedded H(K) otherwise.
// It needs no key, so a storage service can compute it.
func TagGen(c []byte) (Tag, error) {
	suite, scheme, err := parseHeader(c)
	if err != nil {
		return Tag{}, err
	}
	if scheme == CE {
		return Tag(suite.Sum(c)), nil
	}
	var t Tag
	copy(t[:], c[len(c)-Size:])
	return t, nil
}

// Dec decrypts c under k. For guarded schemes (all but HCE1) it recomputes H(M) of the
// recovered message and asks guard whether k = KeyGen(M); nil guard means GuardLocal
// (plain MLE). Any failed check returns ErrIntegrity and no plaintext.
func Dec(k Key, c []byte, guard Guard) ([]byte, error) {
	return AppendDec(nil, k, c, guard)
}

// AppendDec appends Dec(k, c) to dst. On error dst's new bytes are zeroed and nil returned.
func AppendDec(dst []byte, k Key, c []byte, guard Guard) ([]byte, error) {
	suite, scheme, err := parseHeader(c)
	if err != nil {
		return nil, err
	}
	body, tr := c[HeaderSize:len(c)-scheme.trailer()], c[len(c)-scheme.trailer():]
	ek, err := checkTrailer(suite, scheme, k, tr)
	if err != nil {
		return nil, err
	}
	out, msg := grow(dst, len(body))
	xorCTR(ek, msg, body)
	if scheme.Guarded() {
		if err := runGuard(guard, Digest(suite.Sum(msg)), k); err != nil {
			clear(msg)
			return nil, err
		}
	}
	return out, nil
}

// checkTrailer verifies the embedded H(K) and returns the key that encrypted the body
// (K itself, or L = (L^K)^K for RCE).
func checkTrailer(suite Suite, scheme Scheme, k Key, tr []byte) (Key, error) {
	if scheme == CE {
		return k, nil
	}
	hk := suite.Sum(k[:])
	if subtle.ConstantTimeCompare(hk[:], tr[len(tr)-Size:]) != 1 {
		return Key{}, fmt.Errorf("%w: embedded key hash does not match the key", ErrIntegrity)
	}
	if scheme != RCE {
		return k, nil
	}
	var l Key
	subtle.XORBytes(l[:], tr[:Size], k[:])
	return l, nil
}

func runGuard(g Guard, d Digest, k Key) error {
	if g == nil {
		g = GuardLocal
	}
	return g(d, k)
}

// Parse reports the suite and scheme of a ciphertext, checking its framing.
func Parse(c []byte) (Suite, Scheme, error) { return parseHeader(c) }

func parseHeader(c []byte) (Suite, Scheme, error) {
	suite, scheme, err := parseHeaderSize(c, int64(len(c)))
	return suite, scheme, err
}

// parseHeaderSize checks the header bytes in c (at least HeaderSize of them) and that a
// ciphertext of size bytes can hold the scheme's overhead.
func parseHeaderSize(c []byte, size int64) (Suite, Scheme, error) {
	if len(c) < HeaderSize {
		return 0, 0, fmt.Errorf("%w: %d bytes is shorter than the header", ErrIntegrity, len(c))
	}
	suite, scheme := Suite(c[0]), Scheme(c[1])
	if !suite.valid() {
		return 0, 0, fmt.Errorf("%w: unknown suite byte 0x%02x", ErrFormat, c[0])
	}
	if !scheme.valid() {
		return 0, 0, fmt.Errorf("%w: unknown scheme byte 0x%02x", ErrFormat, c[1])
	}
	if size < int64(scheme.Overhead()) {
		return 0, 0, fmt.Errorf("%w: %d-byte %v ciphertext is shorter than its %d-byte overhead",
			ErrIntegrity, size, scheme, scheme.Overhead())
	}
	return suite, scheme, nil
}

// Encrypt runs the whole scheme on a message in memory: KeyGen through kd (K =
// Derive(H(M))), Enc and TagGen. RCE makes a single pass over msg (hashing each block as it
// encrypts it under the random L); the others hash first, then encrypt.
func (m *MLE) Encrypt(ctx context.Context, kd KeyDeriver, msg []byte) ([]byte, Key, Tag, error) {
	c, r, err := m.AppendEncrypt(ctx, nil, kd, msg)
	return c, r.Key, r.Tag, err
}

// AppendEncrypt is Encrypt appending the ciphertext to dst.
func (m *MLE) AppendEncrypt(ctx context.Context, dst []byte, kd KeyDeriver, msg []byte) ([]byte, Result, error) {
	var r Result
	derive := func(d Digest) (Key, error) {
		ks, err := kd.DeriveKeys(ctx, []Digest{d})
		if err != nil {
			return Key{}, fmt.Errorf("mle: key derivation: %w", err)
		}
		r.Key, r.Digest = ks[0], d
		return ks[0], nil
	}
	var out []byte
	var err error
	if m.Scheme == RCE {
		out, err = m.appendRCE(dst, msg, derive)
	} else {
		if _, err = derive(m.Hash(msg)); err != nil {
			return nil, r, err
		}
		out, err = m.AppendEnc(dst, r.Key, msg)
	}
	if err != nil {
		return nil, r, err
	}
	r.Size = int64(len(out) - len(dst))
	r.Tag, err = TagGen(out[len(dst):])
	return out, r, err
}

// appendRCE is single-pass RCE: each block is hashed, then encrypted under L while still
// in cache; K is derived once H(M) is known.
func (m *MLE) appendRCE(dst, msg []byte, derive func(Digest) (Key, error)) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	var l Key
	if _, err := io.ReadFull(m.rand(), l[:]); err != nil {
		return nil, fmt.Errorf("mle: random key: %w", err)
	}
	out, body := grow(dst, HeaderSize+len(msg)+2*Size)
	body[0], body[1] = byte(m.Suite), byte(RCE)
	ct := body[HeaderSize : HeaderSize+len(msg)]
	stream := newCTR(l)
	var d Digest
	if len(msg) <= bufSize { // one block: the one-shot hash is faster than a streaming one
		d = Digest(m.Suite.Sum(msg))
		stream.XORKeyStream(ct, msg)
	} else {
		h := m.Suite.NewHash()
		for off := 0; off < len(msg); off += bufSize {
			end := min(off+bufSize, len(msg))
			h.Write(msg[off:end])
			stream.XORKeyStream(ct[off:end], msg[off:end])
		}
		h.Sum(d[:0])
	}
	k, err := derive(d)
	if err != nil {
		return nil, err
	}
	m.rceTrailer(body[HeaderSize+len(msg):], l, k)
	return out, nil
}

var zeroIV [aes.BlockSize]byte

// xorCTR sets dst = src XOR AES-256-CTR keystream(k, IV = 0).
func xorCTR(k Key, dst, src []byte) {
	newCTR(k).XORKeyStream(dst, src)
}

func newCTR(k Key) cipher.Stream {
	b, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err) // unreachable: a 32-byte key is always valid
	}
	return cipher.NewCTR(b, zeroIV[:])
}

// grow extends b by n bytes, returning the whole slice and the new part.
func grow(b []byte, n int) (all, tail []byte) {
	l := len(b)
	if cap(b)-l < n {
		nb := make([]byte, l, l+n)
		copy(nb, b)
		b = nb
	}
	b = b[:l+n]
	return b, b[l:]
}

// DecAs is Dec for a caller that knows how c was made (it recorded suite and scheme when
// it encrypted): a header naming anything else is ErrIntegrity before any byte is
// decrypted. Without it the untrusted header chooses the scheme, and a storage service
// could relabel an HCE2 ciphertext as HCE1 to switch guarded decryption off.
func DecAs(k Key, c []byte, suite Suite, scheme Scheme, guard Guard) ([]byte, error) {
	s, sc, err := parseHeader(c)
	if err != nil {
		return nil, err
	}
	if s != suite || sc != scheme {
		return nil, fmt.Errorf("%w: ciphertext says %v/%v, its key record says %v/%v", ErrIntegrity, s, sc, suite, scheme)
	}
	return AppendDec(nil, k, c, guard)
}
