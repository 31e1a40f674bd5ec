// Package testutil starts the real components veil is tested against (an S3 server, a
// Redis server, PostgreSQL, veil's own servers) on loopback, and holds other helpers shared by tests.
// Only _test.go files import it. A missing binary skips the test, unless
// VEIL_REQUIRE_INTEGRATION=1 (set by scripts/test and CI), where it fails: integration
// tests never disappear silently.
package testutil
