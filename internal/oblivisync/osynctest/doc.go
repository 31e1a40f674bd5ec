// Package osynctest holds test helpers shared by the oblivisync and fusefs tests: a
// random workload generator that drives a filesystem under test and a reference
// directory side by side, and snapshots to compare them. Only _test.go files import it.
package osynctest
