// Package archtest enforces veil's layering (docs/design.md) as a test: each rule names a
// package prefix and the veil packages it must never import, directly or not. It has no
// code of its own besides the test.
package archtest
