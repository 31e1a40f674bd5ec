package testutil

import (
	"strconv"
	"testing"
	"time"
)

// StartRedis starts a real redis-server on a free loopback port with persistence off,
// stopped when the test ends, and returns its redis:// URL. Without redis-server the
// test is skipped (failed under VEIL_REQUIRE_INTEGRATION=1).
func StartRedis(t testing.TB) string {
	t.Helper()
	bin := RequireBinary(t, "redis-server")
	port := FreePort(t)
	Start(t, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir())
	WaitTCP(t, Addr(port), 10*time.Second)
	return "redis://" + Addr(port) + "/0"
}
