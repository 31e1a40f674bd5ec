package ksclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/testutil"
)

// Check tells a credential that does not go with the key server (revoked, another key
// server's, a client certificate another key server issued, a key the server does not
// serve) from a key server that is down or rate-limiting, which is no fault of the
// credential: 'veil init' refuses the first and only warns of the second.
func TestCheckTellsWrongCredentialFromOutage(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{
		RateLimit: keyserver.RateLimit{Mode: keyserver.ModeBounded, Q: 1, Epoch: time.Hour}})
	other := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	alice, foreign := issue(t, k, "alice"), issue(t, other, "alice")
	bob := issue(t, k, "bob")
	if err := keyserver.RevokeClient(k.dir, "bob"); err != nil {
		t.Fatal(err)
	}
	k.reloadAll()
	// mix is alice's credential with some fields of the other key server's.
	mix := func(change func(mine, theirs *kswire.Credential)) []byte {
		var mine, theirs kswire.Credential
		json.Unmarshal(alice.raw, &mine)
		json.Unmarshal(foreign.raw, &theirs)
		change(&mine, &theirs)
		b, err := kswire.MarshalCredential(&mine)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	check := func(raw []byte, url string) error {
		cred, err := ksclient.ParseCredential(raw)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := ksclient.New(cred, ksclient.Options{URL: url, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.Check(context.Background())
	}
	here := "https://" + k.ls.Addr()
	if err := check(alice.raw, ""); err != nil {
		t.Fatalf("a good credential: %v", err)
	}
	for _, c := range []struct {
		name string
		raw  []byte
		url  string
		want string
	}{
		{"revoked", bob.raw, "", "refused the credential (client revoked or unknown)"},
		{"another key server's", foreign.raw, here, "is not the server the credential trusts (x509: certificate signed by unknown authority"},
		{"a client certificate of another key server", mix(func(m, o *kswire.Credential) { m.CertPEM, m.KeyPEM = o.CertPEM, o.KeyPEM }), "",
			"refused the TLS handshake (remote error: tls: unknown certificate authority;"},
		{"a key the server does not serve", mix(func(m, o *kswire.Credential) { m.Keys, m.CurrentKey = o.Keys, o.CurrentKey }), "",
			"does not serve the credential (http 404: key ristretto255/"},
	} {
		err := check(c.raw, c.url)
		if got := ksclient.CredentialProblem(err); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: CredentialProblem %q (of %v); want %q...", c.name, got, err, c.want)
		}
	}
	// Not the credential's fault: the budget spent (alice's one evaluation went to the
	// first check), and a key server that is not there.
	if err := check(alice.raw, ""); !errors.Is(err, ksclient.ErrRateLimited) || ksclient.CredentialProblem(err) != "" {
		t.Errorf("rate-limited: %v, CredentialProblem %q; want ErrRateLimited and no problem", err, ksclient.CredentialProblem(err))
	}
	down := "https://" + testutil.Addr(testutil.FreePort(t))
	if err := check(alice.raw, down); !errors.Is(err, ksclient.ErrKSUnavailable) || ksclient.CredentialProblem(err) != "" {
		t.Errorf("nothing listening: %v, CredentialProblem %q; want ErrKSUnavailable and no problem", err, ksclient.CredentialProblem(err))
	}
}
