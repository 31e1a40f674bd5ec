package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrSizeMismatch is a Put body that yields more or fewer bytes than its declared size.
var ErrSizeMismatch = errors.New("body length differs from the declared size")

// ExactReader returns a reader that yields r's bytes and fails unless r yields exactly size
// bytes (any count when size < 0), or once ctx is done. The size check happens on the Read
// that would deliver the last expected byte, and a failing Read returns none of its bytes,
// so a consumer that stops reading after size bytes (or drops an error that comes with a
// full buffer) never sees a whole body from an over-long or broken r. Backends wrap Put's
// reader with it to honour the size contract.
func ExactReader(ctx context.Context, r io.Reader, size int64) io.Reader {
	return &exactReader{ctx: ctx, r: r, size: size}
}

type exactReader struct {
	ctx  context.Context
	r    io.Reader
	size int64
	n    int64
	err  error
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if err := e.ctx.Err(); err != nil {
		return 0, err
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
		if err != nil && err != io.EOF {
			return 0, e.fail(err)
		}
		if err != nil {
			e.err = err
		}
		return n, err
	}
	if err == io.EOF && e.n < e.size {
		err = fmt.Errorf("%w: body ended after %d of %d bytes", ErrSizeMismatch, e.n, e.size)
	}
	if err == nil && e.n == e.size {
		// Probe for extra bytes so an over-long body fails before the caller commits.
		// Only a clean io.EOF ends the body: a broken stream (io.ErrUnexpectedEOF from an
		// aborted HTTP body) after exactly size bytes is still a failure.
		var one [1]byte
		var m int
		var perr error
		for m == 0 && perr == nil {
			m, perr = e.r.Read(one[:])
		}
		switch {
		case m > 0:
			err = fmt.Errorf("%w: body is longer than the declared %d bytes", ErrSizeMismatch, e.size)
		default:
			err = perr
		}
	}
	if err != nil && err != io.EOF {
		return 0, e.fail(err)
	}
	if err != nil {
		e.err = err
	}
	return n, err
}

// fail records a failed body. The bytes of the failing Read are withheld (it returns 0 of
// them): a consumer that drops an error coming with a full buffer (io.ReadFull, minio-go's
// part reader) would otherwise take the declared count as a whole body. A bare
// io.ErrUnexpectedEOF is wrapped, since such readers take it for the end of a short last
// part; errors.Is still finds it.
func (e *exactReader) fail(err error) error {
	if err == io.ErrUnexpectedEOF {
		err = fmt.Errorf("the body's stream broke: %w", err)
	}
	e.err = err
	return err
}
