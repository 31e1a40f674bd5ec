package mle

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Streaming: messages larger than memory.
//
// CE and HCE need two passes over the message: one to hash it (KeyGen), one to encrypt it
// under the resulting key. Seal therefore requires an io.ReadSeeker for them; a caller that
// already hashed the message (e.g. while chunking) calls HashStream/EncStream itself. RCE is
// single pass: Seal encrypts under a random L while hashing M, then derives K and appends
// L^K || H(K).
//
// Open never releases unverified plaintext: for guarded schemes it decrypts once to hash
// (verify), then again to write, so memory stays at one buffer and the cost is one extra
// CTR pass (see docs/design.md). HCE1 has nothing to verify and makes one pass.

const bufSize = 64 << 10

// Result describes one sealed message.
type Result struct {
	Key    Key    // the message key K
	Tag    Tag    // T
	Digest Digest // H(M)
	Size   int64  // ciphertext bytes written
}

// HashStream reads r to the end and returns H(M) and the message length.
func (m *MLE) HashStream(r io.Reader) (Digest, int64, error) {
	h := m.Suite.NewHash()
	n, err := io.CopyBuffer(h, r, make([]byte, bufSize))
	var d Digest
	h.Sum(d[:0])
	return d, n, err
}

// EncStream writes Enc(k, M) for the message read from src to dst in one pass and returns
// the ciphertext length and tag. For RCE the random L is drawn here.
func (m *MLE) EncStream(k Key, src io.Reader, dst io.Writer) (int64, Tag, error) {
	r, err := m.seal(src, dst, func(Digest) (Key, error) { return k, nil })
	return r.Size, r.Tag, err
}

// Seal runs KeyGen (through kd), Enc and TagGen over a stream. CE and HCE need src to be
// an io.ReadSeeker positioned at the message start (two passes); RCE reads src once.
func (m *MLE) Seal(ctx context.Context, kd KeyDeriver, src io.Reader, dst io.Writer) (Result, error) {
	derive := func(d Digest) (Key, error) {
		ks, err := kd.DeriveKeys(ctx, []Digest{d})
		if err != nil {
			return Key{}, fmt.Errorf("mle: key derivation: %w", err)
		}
		return ks[0], nil
	}
	if m.Scheme == RCE {
		return m.seal(src, dst, derive)
	}
	rs, ok := src.(io.ReadSeeker)
	if !ok {
		return Result{}, errors.New("mle: " + m.Scheme.String() + " is two-pass: Seal needs an io.ReadSeeker (or use HashStream and EncStream)")
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return Result{}, err
	}
	d, _, err := m.HashStream(rs)
	if err != nil {
		return Result{}, fmt.Errorf("mle: hash pass: %w", err)
	}
	k, err := derive(d)
	if err != nil {
		return Result{}, err
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return Result{}, err
	}
	r, err := m.seal(rs, dst, func(Digest) (Key, error) { return k, nil })
	r.Digest = d
	return r, err
}

// seal is the one encryption pass. key is called with H(M) once the message is read for
// RCE (which hashes as it encrypts); for the other schemes before any output, with a zero
// digest, since their key must be known in advance.
func (m *MLE) seal(src io.Reader, dst io.Writer, key func(Digest) (Key, error)) (Result, error) {
	var res Result
	if err := m.check(); err != nil {
		return res, err
	}
	var bodyKey, k Key
	var msgHash hash.Hash
	switch m.Scheme {
	case RCE:
		if _, err := io.ReadFull(m.rand(), bodyKey[:]); err != nil {
			return res, fmt.Errorf("mle: random key: %w", err)
		}
		msgHash = m.Suite.NewHash()
	default:
		var err error
		if k, err = key(Digest{}); err != nil {
			return res, err
		}
		bodyKey = k
	}
	cw := &countWriter{w: dst}
	var out io.Writer = cw
	var ctHash hash.Hash
	if m.Scheme == CE { // T = H(C), hashed as it is written
		ctHash = m.Suite.NewHash()
		out = io.MultiWriter(cw, ctHash)
	}
	if _, err := out.Write([]byte{byte(m.Suite), byte(m.Scheme)}); err != nil {
		return res, err
	}
	if err := ctrCopy(out, src, bodyKey, msgHash); err != nil {
		return res, err
	}
	switch m.Scheme {
	case CE:
		ctHash.Sum(res.Tag[:0])
	case HCE1, HCE2:
		res.Tag = Tag(m.Suite.Sum(k[:]))
		if _, err := out.Write(res.Tag[:]); err != nil {
			return res, err
		}
	case RCE:
		msgHash.Sum(res.Digest[:0])
		var err error
		if k, err = key(res.Digest); err != nil {
			return res, err
		}
		tr := make([]byte, 2*Size)
		m.rceTrailer(tr, bodyKey, k)
		copy(res.Tag[:], tr[Size:])
		if _, err := out.Write(tr); err != nil {
			return res, err
		}
	}
	res.Key, res.Size = k, cw.n
	return res, nil
}

// Open decrypts the size-byte ciphertext in src under k and writes the message to dst,
// only after guarded decryption has accepted it (nil guard: GuardLocal). On an integrity
// failure nothing has been written to dst.
func Open(k Key, src io.ReaderAt, size int64, dst io.Writer, guard Guard) error {
	suite, scheme, err := readHeader(src, size)
	if err != nil {
		return err
	}
	tl := int64(scheme.trailer())
	tr := make([]byte, tl)
	if _, err := src.ReadAt(tr, size-tl); err != nil && tl > 0 {
		return fmt.Errorf("mle: read trailer: %w", err)
	}
	bodyKey, err := checkTrailer(suite, scheme, k, tr)
	if err != nil {
		return err
	}
	body := io.NewSectionReader(src, HeaderSize, size-HeaderSize-tl)
	if scheme.Guarded() {
		h := suite.NewHash()
		if err := ctrCopy(h, body, bodyKey, nil); err != nil {
			return err
		}
		var d Digest
		h.Sum(d[:0])
		if err := runGuard(guard, d, k); err != nil {
			return err
		}
		body.Seek(0, io.SeekStart)
	}
	return ctrCopy(dst, body, bodyKey, nil)
}

// TagGenStream is TagGen for a ciphertext in src of the given size.
func TagGenStream(src io.ReaderAt, size int64) (Tag, error) {
	suite, scheme, err := readHeader(src, size)
	if err != nil {
		return Tag{}, err
	}
	var t Tag
	if scheme != CE {
		_, err := src.ReadAt(t[:], size-Size)
		return t, err
	}
	h := suite.NewHash()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(src, 0, size), make([]byte, bufSize)); err != nil {
		return t, err
	}
	h.Sum(t[:0])
	return t, nil
}

// ctrCopy writes src XOR keystream(k) to dst; a non-nil in also hashes what src yields.
// readHeader reads and checks the header of a size-byte ciphertext in src.
func readHeader(src io.ReaderAt, size int64) (Suite, Scheme, error) {
	hdr := make([]byte, HeaderSize)
	if size >= HeaderSize {
		if _, err := src.ReadAt(hdr, 0); err != nil {
			return 0, 0, fmt.Errorf("mle: read header: %w", err)
		}
	} else {
		hdr = hdr[:size]
	}
	return parseHeaderSize(hdr, size)
}

func ctrCopy(dst io.Writer, src io.Reader, k Key, in hash.Hash) error {
	stream := newCTR(k)
	buf := make([]byte, bufSize)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if in != nil {
				in.Write(buf[:n])
			}
			stream.XORKeyStream(buf[:n], buf[:n])
			if _, err := dst.Write(buf[:n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
