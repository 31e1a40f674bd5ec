package storagetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// pattern returns a deterministic stream of n pseudo-random bytes for seed. It is test
// data only (math/rand is fine here), generated on the fly so 100 MiB never sits in memory.
func pattern(seed uint64, n int64) io.Reader {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return io.LimitReader(rand.NewChaCha8(s), n)
}

// digest hashes a stream and counts its bytes.
func digest(t *testing.T, r io.Reader) ([32]byte, int64) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d, n
}

// failingReader yields n bytes of data and then fails.
type failingReader struct{ n int }

var errReader = errors.New("storagetest: reader failed on purpose")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errReader
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	for i := range p {
		p[i] = 'x'
	}
	f.n -= len(p)
	return len(p), nil
}

func fill(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
