package storage

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestExactReader(t *testing.T) {
	ctx := context.Background()
	read := func(r io.Reader) (string, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	}
	if got, err := read(ExactReader(ctx, strings.NewReader("abcd"), 4)); err != nil || got != "abcd" {
		t.Fatalf("exact: %q %v", got, err)
	}
	if got, err := read(ExactReader(ctx, strings.NewReader("abcd"), -1)); err != nil || got != "abcd" {
		t.Fatalf("unknown size: %q %v", got, err)
	}
	if _, err := read(ExactReader(ctx, strings.NewReader(""), 0)); err != nil {
		t.Fatalf("empty: %v", err)
	}
	if _, err := read(ExactReader(ctx, strings.NewReader("abc"), 4)); !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("short: %v", err)
	}
	// A consumer that stops at size bytes still sees the error of an over-long body.
	r := ExactReader(ctx, strings.NewReader("abcde"), 4)
	if n, err := io.ReadFull(r, make([]byte, 4)); n != 4 || err != nil {
		if !errors.Is(err, ErrSizeMismatch) {
			t.Fatalf("long: %d %v", n, err)
		}
	}
	// A stream that breaks right after size bytes is not a clean end.
	broken := io.MultiReader(strings.NewReader("abcd"), iotest.ErrReader(io.ErrUnexpectedEOF))
	if _, err := read(ExactReader(ctx, broken, 4)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("broken after size: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := read(ExactReader(cctx, strings.NewReader("abcd"), 4)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A failing body never hands its consumer the declared count of bytes together with the
// error, and never a bare io.ErrUnexpectedEOF: io.ReadFull (and minio-go's part reader)
// drop an error that comes with a full buffer, and minio-go takes a bare
// io.ErrUnexpectedEOF for a short last part, so either stored a cut body as complete.
func TestExactReaderFailureNeverLooksComplete(t *testing.T) {
	ctx := context.Background()
	// Over-long body read into a buffer of exactly the declared size.
	if n, err := io.ReadFull(ExactReader(ctx, strings.NewReader("abcde"), 4), make([]byte, 4)); err == nil {
		t.Fatalf("over-long body read as a whole: %d bytes, no error", n)
	}
	// Stream broken right after the declared size, same buffer.
	broken := io.MultiReader(strings.NewReader("abcd"), iotest.ErrReader(io.ErrUnexpectedEOF))
	if n, err := io.ReadFull(ExactReader(ctx, broken, 4), make([]byte, 4)); err == nil {
		t.Fatalf("broken body read as a whole: %d bytes, no error", n)
	}
	// Unknown size: a broken stream is an error that is not the bare io.ErrUnexpectedEOF.
	for _, size := range []int64{-1, 10} {
		r := ExactReader(ctx, io.MultiReader(strings.NewReader("abcd"), iotest.ErrReader(io.ErrUnexpectedEOF)), size)
		_, err := io.ReadAll(r)
		if err == io.ErrUnexpectedEOF || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("size %d: broken stream gave %v, want a wrapped io.ErrUnexpectedEOF", size, err)
		}
	}
}
