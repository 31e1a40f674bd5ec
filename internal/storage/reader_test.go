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
