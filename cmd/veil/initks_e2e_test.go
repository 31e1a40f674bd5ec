package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// init tries the key server credential it is given (one derivation): a credential the key
// server refuses (revoked, another key server's) fails init in one line naming the key
// server and what was wrong, and writes nothing; a key server that is rate-limiting, or
// cannot be reached, is a one-line warning and init goes on. init did not contact the key
// server: a wrong credential showed only at the first put, as files stored without
// deduplication (exit 4).
func TestE2EInitChecksKeyServerCredential(t *testing.T) {
	ksDir := filepath.Join(t.TempDir(), "ks")
	ksAddr := testutil.Addr(testutil.FreePort(t))
	veil := func(args ...string) {
		t.Helper()
		if out, err := execVeil(args...); err != nil {
			t.Fatalf("veil %v: %v\n%s", args, err, out)
		}
	}
	creds := t.TempDir()
	cred := func(name string) string { return filepath.Join(creds, name+".json") }
	veil("keyserver", "init", "--dir", ksDir, "--url", "https://"+ksAddr)
	for _, name := range []string{"alice", "bob"} {
		veil("keyserver", "client", "add", name, "--dir", ksDir, "--out", cred(name))
	}
	veil("keyserver", "client", "revoke", "bob", "--dir", ksDir)
	// Another key server's credential, naming this one's address.
	otherDir := filepath.Join(t.TempDir(), "other")
	veil("keyserver", "init", "--dir", otherDir, "--url", "https://"+ksAddr)
	veil("keyserver", "client", "add", "carol", "--dir", otherDir, "--out", cred("carol"))
	// A key server that is not running.
	downDir := filepath.Join(t.TempDir(), "down")
	down := testutil.Addr(testutil.FreePort(t))
	veil("keyserver", "init", "--dir", downDir, "--url", "https://"+down)
	veil("keyserver", "client", "add", "dave", "--dir", downDir, "--out", cred("dave"))
	// One evaluation per client and hour: alice's first init spends it.
	testutil.Start(t, veilBin, "keyserver", "serve", "--dir", ksDir, "--https", ksAddr, "--udp", "-",
		"--ratelimit", "bounded", "--ratelimit-q", "1", "--ratelimit-epoch", "1h")
	testutil.WaitTCP(t, ksAddr, 20*time.Second)

	initAs := func(name string) (profile, storage, stderr string, code int) {
		t.Helper()
		u := &user{name: name, config: filepath.Join(t.TempDir(), "profile"), passFile: filepath.Join(t.TempDir(), "pass")}
		os.WriteFile(u.passFile, []byte("passphrase of "+name+"\n"), 0o600)
		storage = filepath.Join(t.TempDir(), "store")
		_, stderr, code = u.run(t, "init", "--storage", storage, "--ks-credential", cred(name))
		return u.config, storage, stderr, code
	}
	if _, _, errs, code := initAs("alice"); code != 0 || errs != "" {
		t.Fatalf("init with a good credential: exit %d, stderr %q", code, errs)
	}
	hint := ": nothing was written; ask its operator for a credential of it ('veil keyserver client add', or a new invitation)\n"
	for _, c := range []struct{ name, want string }{
		{"bob", "veil: key server https://" + ksAddr + " refused the credential (client revoked or unknown)" + hint},
		{"carol", "veil: key server https://" + ksAddr + " is not the server the credential trusts (x509: certificate signed by unknown authority"},
	} {
		profile, storage, errs, code := initAs(c.name)
		if code != 1 || !strings.HasPrefix(errs, c.want) || strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, hint) {
			t.Errorf("init with %s's credential: exit %d, stderr %q; want exit 1, %q...", c.name, code, errs, c.want)
		}
		for _, dir := range []string{profile, storage} {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("init with %s's credential refused, but made %s", c.name, dir)
			}
		}
	}
	// No fault of the credential: warned, and the profile made.
	for _, c := range []struct{ name, want string }{
		{"alice", "warning: key server https://" + ksAddr + " accepted the credential but has reached this client's rate limit: " +
			"puts store without deduplication until it answers\n"}, // "(key server rate limit reached (rate_limited))" until session 17
		{"dave", "warning: could not check the credential with key server https://" + down + " (key server unavailable: 3 attempts failed, last: " +
			down + ": connection refused); init goes on: puts store without deduplication until it answers\n"},
	} {
		profile, _, errs, code := initAs(c.name)
		if code != 0 || errs != c.want {
			t.Errorf("init with %s's credential: exit %d, stderr %q; want exit 0, %q", c.name, code, errs, c.want)
		}
		if _, err := os.Stat(filepath.Join(profile, "key")); err != nil {
			t.Errorf("init with %s's credential made no profile: %v", c.name, err)
		}
	}
	// $VEIL_KS_URL replaces the profile's key server URLs for every command: init checks
	// the credential there too (it asked the credential's URL, here answering, while every
	// put would ask one that does not), and does not write it into the profile.
	veil("keyserver", "client", "add", "erin", "--dir", ksDir, "--out", cred("erin"))
	t.Setenv("VEIL_KS_URL", "https://"+down)
	profile, _, errs, code := initAs("erin")
	want := "warning: could not check the credential with key server https://" + down + " ("
	if code != 0 || !strings.HasPrefix(errs, want) {
		t.Errorf("init with VEIL_KS_URL=https://%s: exit %d, stderr %q; want exit 0, %q...", down, code, errs, want)
	}
	if cfg, err := os.ReadFile(filepath.Join(profile, "config.json")); err != nil || strings.Contains(string(cfg), "ks_urls") {
		t.Errorf("init with VEIL_KS_URL wrote %s (%v): an override is not a setting", cfg, err)
	}
	t.Setenv("VEIL_KS_URL", "ks.example:7443")
	if _, _, errs, code := initAs("erin"); code != 1 || errs != `veil: $VEIL_KS_URL: key server url "ks.example:7443": want https://host:port`+"\n" {
		t.Errorf("init with VEIL_KS_URL=ks.example:7443: exit %d, stderr %q", code, errs)
	}
}
