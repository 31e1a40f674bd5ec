// Package archtest enforces veil's layering (docs/design.md) as a test, from one rule table
// (rules.go): each rule names packages (a package, or "x/..." for it and everything below)
// and the packages they must never depend on, directly or not. Every package of the module
// must match a rule, so a new package starts with one. No other package re-implements
// the check.
package archtest
