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
	url, _ := StartRedisProc(t)
	return url
}

// StartRedisProc is StartRedis, also giving the process (to kill it mid-test).
func StartRedisProc(t testing.TB) (string, *Process) {
	t.Helper()
	bin := RequireBinary(t, "redis-server")
	port := FreePort(t)
	p := Start(t, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir())
	WaitTCP(t, Addr(port), 10*time.Second)
	return "redis://" + Addr(port) + "/0", p
}
