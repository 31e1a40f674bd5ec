// Package twopctest sets up pairs of twopc sessions for the Metal packages' tests: Server 1
// (garbler) and Server 2 (evaluator) over a real loopback TCP connection.
//
// Layering: test support. It imports internal/metal/twopc only; only tests import it.
package twopctest
