package storeserver

import (
	"net/http"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// Keep-alive connections idle at a service that holds --max-conns give up their slots to
// new clients (server.Limiter); they held them for the idle timeout (two minutes), and a
// new client waited that long.
func TestIdleConnsDoNotHoldSlots(t *testing.T) {
	s := newTestService(t, Config{MaxConns: 3})
	_, cred := addUser(t, s, "alice")
	url := serve(t, s)
	testutil.IdleConnsGiveWay(t, url, 3, func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(t, cred)}}
	})
}
