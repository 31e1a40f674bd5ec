package verr

import "errors"

// ErrIntegrity is the one integrity error: data that failed a check of authentication,
// framing or freshness. Every package's integrity sentinel wraps it.
var ErrIntegrity = errors.New("integrity check failed")

// NewIntegrity returns a package's own integrity sentinel, reading text: errors.Is matches
// it (and any error wrapping it) both to itself and to ErrIntegrity.
func NewIntegrity(text string) error { return &integrity{text} }

type integrity struct{ text string }

func (e *integrity) Error() string { return e.text }
func (e *integrity) Unwrap() error { return ErrIntegrity }
