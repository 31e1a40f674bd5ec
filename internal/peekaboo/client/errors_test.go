package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/veil-project/veil/internal/verr"
)

// A result the K-server did not match is the one integrity error every package wraps.
func TestIntegrityIsVeilsIntegrityError(t *testing.T) {
	err := fmt.Errorf("%w (pair %x)", ErrIntegrity, []byte{1, 2, 3, 4})
	if !errors.Is(err, ErrIntegrity) || !errors.Is(err, verr.ErrIntegrity) || errors.Is(err, ErrRejected) {
		t.Fatalf("%v", err)
	}
}
