package mle

import (
	"errors"

	"github.com/veil-project/veil/internal/verr"
)

// ErrIntegrity reports a ciphertext that failed a check: guarded decryption, the embedded
// tag, or its framing (truncated, wrong length). No plaintext is released with it.
var ErrIntegrity = verr.NewIntegrity("mle: integrity check failed") // errors.Is(err, verr.ErrIntegrity) holds too

// ErrFormat reports bytes that are not an MLE ciphertext this version understands
// (unknown version or scheme byte).
var ErrFormat = errors.New("mle: unsupported ciphertext format")
