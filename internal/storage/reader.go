package storage

import (
	"fmt"
	"io"
)

// ExactReader returns a reader that yields r's bytes and fails unless r yields exactly size
// bytes (any count when size < 0). The check happens on the Read that delivers the last
// expected byte, so a consumer that stops reading after size bytes still sees the error of
// an over-long r. Backends wrap Put's reader with it to honour the size contract.
func ExactReader(r io.Reader, size int64) io.Reader {
	return &exactReader{r: r, size: size}
}

type exactReader struct {
	r    io.Reader
	size int64
	n    int64
	err  error
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.size >= 0 && int64(len(p)) > e.size-e.n {
		p = p[:e.size-e.n]
	}
	var n int
	var err error
	if len(p) > 0 || e.size < 0 {
		n, err = e.r.Read(p)
	}
	e.n += int64(n)
	if e.size < 0 {
		if err != nil {
			e.err = err
		}
		return n, err
	}
	if err == io.EOF && e.n < e.size {
		err = fmt.Errorf("body ended after %d of %d bytes: %w", e.n, e.size, io.ErrUnexpectedEOF)
	}
	if err == nil && e.n == e.size {
		// Probe for extra bytes so an over-long body fails before the caller commits.
		var one [1]byte
		m, perr := io.ReadFull(e.r, one[:])
		switch {
		case m > 0:
			err = fmt.Errorf("body is longer than the declared %d bytes", e.size)
		case perr == io.EOF || perr == io.ErrUnexpectedEOF:
			err = io.EOF
		default:
			err = perr
		}
	}
	if err != nil {
		e.err = err
	}
	return n, err
}
