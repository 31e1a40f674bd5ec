package kserver

import (
	"net/http"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// Keep-alive connections idle at a K-server that holds MaxConns give up their slots to
// new clients (server.Limiter); they held them for the idle timeout. The V-server serves
// through the same server.Limit.
func TestIdleConnsDoNotHoldSlots(t *testing.T) {
	k := startK(t, t.TempDir(), Config{MaxConns: 3})
	testutil.IdleConnsGiveWay(t, k.url, 3, func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: k.noCert}}
	})
}
