// Package mlebench holds the MLE benchmark cases shared by `go test -bench` in internal/mle
// and by `veil bench mle`, so both print the same figures. It imports mle and the testing
// package's benchmark runner; nothing imports it but tests and cmd/veil.
package mlebench
