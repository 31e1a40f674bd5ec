package verr

import (
	"errors"
	"fmt"
	"testing"
)

func TestNewIntegrity(t *testing.T) {
	a, b := NewIntegrity("a: integrity check failed"), NewIntegrity("integrity check failed")
	wrapped := fmt.Errorf("get x: %w", a)
	switch {
	case a.Error() != "a: integrity check failed" || b.Error() != "integrity check failed":
		t.Fatalf("texts %q, %q", a, b)
	case !errors.Is(wrapped, a) || !errors.Is(wrapped, ErrIntegrity) || !errors.Is(b, ErrIntegrity):
		t.Fatal("a package's sentinel, or an error wrapping it, is not ErrIntegrity")
	case errors.Is(wrapped, b) || errors.Is(b, a) || errors.Is(ErrIntegrity, a):
		t.Fatal("one package's sentinel matches another's")
	}
}
