package ksclient_test

import (
	"context"
	"testing"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/kswire"
)

// bothCreds issues one client and returns it as the client library and the raw tests read it.
func bothCreds(t *testing.T, k *ks, name string) (*ksclient.Credential, *kswire.Parsed) {
	t.Helper()
	u := issue(t, k, name)
	return u.cred, u.parsed
}

// A client that closes releases its UDP session on the key server at once: many short
// runs (one per put) never exhaust the per-client session limit (71 puts used to leave 19
// files undeduplicated).
func TestUDPSessionReleasedOnClose(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{MaxClientSess: 2})
	cred, a := bothCreds(t, k, "alice")
	for i := range 5 {
		cl, err := ksclient.New(cred, ksclient.Options{Transport: "udp", Timeout: fast.Timeout, Retries: fast.Retries})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.DeriveKeys(context.Background(), digestsN(1, "run")); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		cl.Close()
	}
	openSession(t, k, a) // both of alice's slots are free again
	openSession(t, k, a)
}

// A key server that answers over HTTPS but grants no UDP session (the client's sessions
// are all taken) is asked over HTTPS: keys, not a fallback to random keys.
func TestUDPRefusedFallsBackToHTTPS(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{MaxClientSess: 2})
	cred, a := bothCreds(t, k, "alice")
	openSession(t, k, a)
	openSession(t, k, a)
	if _, err := tryOpenSession(k, a); err == nil {
		t.Fatal("a third session was granted")
	}
	cl := k.client(cred, "udp", ksclient.Options{Timeout: fast.Timeout, Retries: fast.Retries})
	keys, err := cl.DeriveKeys(context.Background(), digestsN(3, "fallback"))
	if err != nil || len(keys) != 3 {
		t.Fatalf("udp client without a session: %d keys, %v", len(keys), err)
	}
	https := k.client(cred, "https", ksclient.Options{})
	want, err := https.DeriveKeys(context.Background(), digestsN(3, "fallback"))
	if err != nil || want[0] != keys[0] {
		t.Fatalf("keys over the fallback differ from HTTPS's: %v", err)
	}
}
