package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// A user given the name (or address) of a key server or store whose certificate does not
// name it is told so by init, with both ways out: another name, or the operator's 'cert'
// command; once the operator ran it, init goes through with the same credentials. init
// said the key server "is not the server the credential trusts" and told the user to ask
// for a new credential, which would have failed the same way (found by a user
// walkthrough), and of the store that it "does not answer".
func TestE2EInitNamesHostTheCertificateLacks(t *testing.T) {
	storeDir, ksDir := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "ks")
	storeAddr, ksAddr := secondLoopback(t), secondLoopback(t)
	creds := t.TempDir()
	storeCred, ksCred := filepath.Join(creds, "alice.store.json"), filepath.Join(creds, "alice.ks.json")
	for _, args := range [][]string{
		{"store", "init", "--dir", storeDir},
		{"store", "user", "add", "alice", "--dir", storeDir, "--out", storeCred},
		{"keyserver", "init", "--dir", ksDir, "--udp", "-"},
		{"keyserver", "client", "add", "alice", "--dir", ksDir, "--out", ksCred, "--url", "https://" + ksAddr},
	} {
		if out, errs, code := opVeil(t, args...); code != 0 {
			t.Fatalf("veil %v: exit %d %s %s", args, code, out, errs)
		}
	}
	testutil.Start(t, veilBin, "store", "serve", "--dir", storeDir, "--listen", storeAddr, "--log-level", "warn")
	testutil.Start(t, veilBin, "keyserver", "serve", "--dir", ksDir, "--https", ksAddr, "--udp", "-", "--log-level", "warn")
	testutil.WaitTCP(t, storeAddr, 20*time.Second)
	testutil.WaitTCP(t, ksAddr, 20*time.Second)

	u := &user{name: "alice", config: filepath.Join(t.TempDir(), "profile"), passFile: filepath.Join(t.TempDir(), "pass")}
	os.WriteFile(u.passFile, []byte("passphrase of alice\n"), 0o600)
	initArgs := []string{"init", "--storage", "veil://" + storeAddr, "--store-credential", storeCred, "--ks-credential", ksCred}
	refused := func(want string) {
		t.Helper()
		_, errs, code := u.run(t, initArgs...)
		if code != 1 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 || strings.Contains(errs, "credential") {
			t.Errorf("init: exit %d, stderr %q; want exit 1, one line %q..., no word of the credential", code, errs, want)
		}
		if _, err := os.Stat(u.config); err == nil {
			t.Errorf("a refused init made %s", u.config)
		}
	}
	lacks := "serves a certificate that does not name 127.0.0.2 (x509: certificate is valid for "
	refused("veil: key server https://" + ksAddr + " " + lacks)
	if _, errs, _ := u.run(t, initArgs...); !strings.HasSuffix(errs, "nothing was written; give --ks-url a name the certificate has, "+
		"or have the server's operator add this one ('veil keyserver cert --dir DIR --host 127.0.0.2')\n") {
		t.Errorf("init: stderr %q; want the way out", errs)
	}
	if out, errs, code := opVeil(t, "keyserver", "cert", "--dir", ksDir, "--host", "127.0.0.2"); code != 0 {
		t.Fatalf("keyserver cert: exit %d %s %s", code, out, errs)
	}
	refused("veil: storage veil://" + storeAddr + " " + lacks)
	if out, errs, code := opVeil(t, "store", "cert", "--dir", storeDir, "--host", "127.0.0.2"); code != 0 {
		t.Fatalf("store cert: exit %d %s %s", code, out, errs)
	}
	if out, errs, code := u.run(t, initArgs...); code != 0 || errs != "" {
		t.Fatalf("init once both certificates name 127.0.0.2: exit %d %s %s", code, out, errs)
	}
}
