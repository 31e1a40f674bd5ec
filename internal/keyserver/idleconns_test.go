package keyserver

import (
	"net/http"
	"testing"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/testutil"
)

// Keep-alive connections idle at a key server that holds MaxConns give up their slots to
// new clients (server.Limiter); they held them for the idle timeout, and a new client
// waited that long.
func TestIdleConnsDoNotHoldSlots(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	_, ls := serveOn(t, dir, Config{MaxConns: 3}, "-")
	b, err := AddClient(dir, "alice", AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := kswire.ParseCredential(b)
	if err != nil {
		t.Fatal(err)
	}
	testutil.IdleConnsGiveWay(t, "https://"+ls.Addr(), 3, func() *http.Client { return httpsClient(cred, false) })
}
