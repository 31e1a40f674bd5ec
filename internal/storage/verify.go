package storage

import "context"

type verifyKey struct{}

// WithVerify marks ctx's puts as repairs (veil put --force): a storage service that
// already holds content with the hash of what it receives reads what it holds back and
// replaces it if it no longer matches that hash, instead of keeping it on its size alone.
// The answer is the same either way. Backends without a service ignore the mark.
func WithVerify(ctx context.Context) context.Context {
	return context.WithValue(ctx, verifyKey{}, true)
}

// Verify reports whether ctx's puts are repairs (WithVerify).
func Verify(ctx context.Context) bool {
	v, _ := ctx.Value(verifyKey{}).(bool)
	return v
}
