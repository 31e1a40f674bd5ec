package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/testutil"
)

// staleCred copies a Peekaboo credential naming another K-server's key (a credential from
// before the K-server was made again): the K-server refuses its chunks.
func staleCred(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var c wire.UserCred
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	other, err := wire.GenerateKServerKey()
	if err != nil {
		t.Fatal(err)
	}
	c.KServerKey = base64.StdEncoding.EncodeToString(other.Public().Marshal())
	b, _ = json.Marshal(c)
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPeekabooCLI runs the README's Peekaboo commands against 'veil serve' as separate
// processes: join, bulk publish, search (exact, substring, advanced, ACL), list, unpublish,
// and one-line errors for bad input.
func TestPeekabooCLI(t *testing.T) {
	d := startServe(t, "alice", "bob")
	alice, bob := d.newUser(t, "alice"), d.newUser(t, "bob")
	for _, u := range []*user{alice, bob} {
		u.mustRun(t, "peekaboo", "join", filepath.Join(d.dir, "invites", u.name+".peekaboo"))
	}
	pairs := filepath.Join(t.TempDir(), "pairs.tsv")
	os.WriteFile(pairs, []byte("report-1.pdf\thost-a:/r1\nreport-2.pdf\thost-a:/r2\n# comment\nphoto.jpg\thost-b:/p\n"), 0o600)
	if out := alice.mustRun(t, "peekaboo", "publish", "--from", pairs, "--json"); strings.TrimSpace(out) != `{"published":3}` {
		t.Fatalf("publish --from: %q", out)
	}
	alice.mustRun(t, "peekaboo", "publish", "secret.txt", "host-a:/s", "--acl", "alice")
	// A bulk publication says how far it got after each chunk (with --progress, or on a
	// terminal): 5000 pairs went by in silence before.
	var bulk strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&bulk, "bulk-%d\tv\n", i)
	}
	os.WriteFile(pairs, []byte(bulk.String()), 0o600)
	if _, errs, code := bob.run(t, "peekaboo", "publish", "--from", pairs, "--progress"); code != 0 ||
		errs != "veil: published 4096 of 5000 pairs\nveil: published 5000 of 5000 pairs\n" {
		t.Fatalf("publish --progress: exit %d, stderr %q", code, errs)
	}

	var res struct {
		Results []struct{ Key, Value string }
		Bytes   int `json:"reply_bytes"`
	}
	out := bob.mustRun(t, "peekaboo", "search", "report-", "--substring", "--advanced", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) != 2 || res.Results[0].Key != "report-1.pdf" {
		t.Fatalf("substring advanced: %q %v", out, err)
	}
	if out := bob.mustRun(t, "peekaboo", "search", "photo.jpg"); strings.TrimSpace(out) != "host-b:/p" {
		t.Fatalf("exact: %q", out)
	}
	var denied, none struct {
		Results []any
		Bytes   int `json:"reply_bytes"`
	}
	json.Unmarshal([]byte(bob.mustRun(t, "peekaboo", "search", "secret.txt", "--json")), &denied)
	json.Unmarshal([]byte(bob.mustRun(t, "peekaboo", "search", "nothing.txt", "--json")), &none)
	if len(denied.Results) != 0 || denied.Bytes != none.Bytes || none.Bytes == 0 {
		t.Fatalf("denied %+v vs no match %+v", denied, none)
	}
	// Private queries: the same answers, neither server sees the query.
	if out := bob.mustRun(t, "peekaboo", "search", "--private-query", "photo.jpg"); strings.TrimSpace(out) != "host-b:/p" {
		t.Fatalf("private query: %q", out)
	}
	var priv struct {
		Results []struct{ Key, Value string }
		Private bool `json:"private_query"`
	}
	out = alice.mustRun(t, "peekaboo", "search", "--private-query", "secret.txt", "--json")
	if err := json.Unmarshal([]byte(out), &priv); err != nil || !priv.Private || len(priv.Results) != 1 || priv.Results[0].Value != "host-a:/s" {
		t.Fatalf("private query --json: %q %v", out, err)
	}
	if out, errs, _ := bob.run(t, "peekaboo", "search", "--private-query", "secret.txt"); out != "" || !strings.Contains(errs, "no match") {
		t.Fatalf("private query of a pair bob may not see: %q %q", out, errs)
	}
	if out := alice.mustRun(t, "peekaboo", "list"); strings.Count(out, "\n") != 4 || !strings.Contains(out, "secret.txt\thost-a:/s\t(acl: alice)") {
		t.Fatalf("list: %q", out)
	}
	if out := alice.mustRun(t, "peekaboo", "unpublish", "photo.jpg"); !strings.Contains(out, "removed 1 pair\n") {
		t.Fatalf("unpublish: %q", out)
	}
	if out, errs, _ := bob.run(t, "peekaboo", "search", "photo.jpg"); out != "" || !strings.Contains(errs, "no match") {
		t.Fatalf("after unpublish: %q %q", out, errs)
	}
	garbage := filepath.Join(t.TempDir(), "alice.pkb")
	os.WriteFile(garbage, []byte("not a credential\n"), 0o600)
	carol := &user{name: "carol", config: filepath.Join(t.TempDir(), "carol")}
	if _, errs, code := carol.run(t, "peekaboo", "join", garbage); code != 1 || !strings.Contains(errs, garbage+" is not a Peekaboo user credential") {
		t.Fatalf("join of a file that is no credential: exit %d, %q", code, errs)
	}
	for _, bad := range [][]string{
		{"peekaboo", "publish", strings.Repeat("k", 300), "v"},
		{"peekaboo", "unpublish", "never-published.txt"},                   // nothing removed is a failure, as for rm
		{"peekaboo", "publish", "typo.txt", "v", "--acl", "bbo"},           // not a registered user
		{"peekaboo", "publish", "typo.txt", "v", "--pseudonym-for", "bbo"}, // nor here
		{"peekaboo", "unpublish", "report-1.pdf", "host-a:/not-its-value"}, // no pair with that value
	} {
		_, errs, code := alice.run(t, bad...)
		if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.HasPrefix(errs, "veil: ") {
			t.Fatalf("%v: exit %d, stderr %q (want a one-line error, exit 1)", bad, code, errs)
		}
	}
	if out := alice.mustRun(t, "peekaboo", "list"); strings.Contains(out, "typo.txt") || !strings.Contains(out, "report-1.pdf") {
		t.Fatalf("a refused publication or unpublication changed the pairs: %q", out)
	}
	// Usage mistakes exit 2 with the usage line (docs/scripting.md), as every other command.
	for _, bad := range [][]string{
		{"peekaboo", "publish", "only-a-key"},
		{"peekaboo", "search", "x", "--limit", "5000"},
		{"peekaboo", "search", "x", "--limit", "0"},
		{"peekaboo", "search", "--private-query", "report", "--substring"},
	} {
		_, errs, code := bob.run(t, bad...)
		if code != 2 || !strings.HasPrefix(errs, "veil: ") || !strings.Contains(errs, "\nusage: veil peekaboo ") {
			t.Fatalf("%v: exit %d, stderr %q (want a usage mistake: exit 2 and the usage line)", bad, code, errs)
		}
	}
}

// TestPeekabooStandaloneServers runs the K-server and the V-server as their own processes
// (kserver init --pir-bits/--pir-slots, serve; vserver init, serve, adduser), then an owner
// publishes and a client's private query finds the value through both.
func TestPeekabooStandaloneServers(t *testing.T) {
	dir := t.TempDir()
	kdir, vdir := filepath.Join(dir, "k"), filepath.Join(dir, "v")
	kaddr, vaddr := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	op := &user{name: "operator", config: filepath.Join(dir, "op"), passFile: filepath.Join(dir, "op.pass")}
	// init says how to serve what it made: the endpoint's port, not the default listen address.
	if out := op.mustRun(t, "peekaboo", "kserver", "init", "--dir", kdir, "--endpoint", "https://"+kaddr, "--pir-bits", "6", "--pir-slots", "8"); !strings.Contains(out, "next: veil peekaboo kserver serve --dir "+kdir+" --listen "+kaddr+",") {
		t.Fatalf("kserver init does not say how to serve it: %q", out)
	}
	rc, err := os.ReadFile(filepath.Join(kdir, "relay.cred"))
	if err != nil || !strings.Contains(string(rc), `"pir_bits": 6`) || !strings.Contains(string(rc), `"pir_slots": 8`) {
		t.Fatalf("relay.cred does not name the table: %v", err)
	}
	if out := op.mustRun(t, "peekaboo", "vserver", "init", "--dir", vdir, "--relay-cred", filepath.Join(kdir, "relay.cred"), "--endpoint", "https://"+vaddr); !strings.Contains(out, "next: veil peekaboo vserver serve --dir "+vdir+" --listen "+vaddr+",") {
		t.Fatalf("vserver init does not say how to serve it: %q", out)
	}
	testutil.Start(t, veilBin, "peekaboo", "vserver", "serve", "--dir", vdir, "--listen", vaddr)
	testutil.WaitTCP(t, vaddr, 20*time.Second)
	cred := filepath.Join(dir, "alice.pkb")
	if out := op.mustRun(t, "peekaboo", "vserver", "adduser", "alice", "--admin-cred", filepath.Join(vdir, "admin.cred"), "--out", cred); !strings.Contains(out, "registered alice; credential in "+cred) {
		t.Fatalf("adduser --out does not say what it did: %q", out)
	}
	alice := &user{name: "alice", config: filepath.Join(dir, "alice"), passFile: filepath.Join(dir, "alice.pass")}
	alice.mustRun(t, "peekaboo", "join", cred)

	// The K-server is not running yet: the publication fails, and since the V-server keeps
	// (and lists, as unacknowledged) the pair it could not relay until it has removed it,
	// the error must say so, and only that (the CLI added "may be published").
	_, errs, code := alice.run(t, "peekaboo", "publish", "draft.pdf", "host-t:/draft")
	t.Logf("publish with the K-server down: %s", errs)
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "published 0 of 1 pair") ||
		!strings.Contains(errs, "lists the chunk's 1 pair as unacknowledged and removes it from both servers") ||
		strings.Contains(errs, "may be published") {
		t.Fatalf("publish with the K-server down: exit %d, %q", code, errs)
	}
	if out := alice.mustRun(t, "peekaboo", "list"); out != "draft.pdf\thost-t:/draft\t(unacknowledged: the K-server never answered its publication; being removed)\n" {
		t.Fatalf("list after the failed relay: %q", out)
	}
	if out := alice.mustRun(t, "peekaboo", "list", "--json"); !strings.Contains(out, `"key":"draft.pdf"`) || !strings.Contains(out, `"unacknowledged":true`) {
		t.Fatalf("list --json after the failed relay: %q", out)
	}

	testutil.Start(t, veilBin, "peekaboo", "kserver", "serve", "--dir", kdir, "--listen", kaddr)
	testutil.WaitTCP(t, kaddr, 20*time.Second)
	alice.mustRun(t, "peekaboo", "publish", "thesis.pdf", "host-t:/thesis")

	// A chunk the K-server refuses (sealed to another K-server key): the V-server keeps none
	// of its pairs and says so, and the CLI adds nothing that contradicts it (it added that
	// the pairs "may be published or kept by the V-server only").
	stale := &user{name: "alice", config: filepath.Join(dir, "alice-stale")}
	os.MkdirAll(stale.config, 0o700)
	staleCred(t, filepath.Join(alice.config, "peekaboo.cred"), filepath.Join(stale.config, "peekaboo.cred"))
	_, errs, code = stale.run(t, "peekaboo", "publish", "refused.pdf", "host-t:/refused")
	t.Logf("publish of a refused chunk: %s", errs)
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "none of its pairs was kept") ||
		strings.Contains(errs, "may be published") || strings.Contains(errs, "in flight") {
		t.Fatalf("publish of a chunk the K-server refuses: exit %d, %q", code, errs)
	}
	if out := alice.mustRun(t, "peekaboo", "list"); strings.Contains(out, "refused.pdf") {
		t.Fatalf("the refused pair is listed: %q", out)
	}

	// Joining with the administrator's credential is refused: it would make a user "admin".
	admin := &user{name: "admin", config: filepath.Join(dir, "admin")}
	if _, errs, code := admin.run(t, "peekaboo", "join", filepath.Join(vdir, "admin.cred")); code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
		!strings.Contains(errs, "veil peekaboo vserver adduser NAME --admin-cred") {
		t.Fatalf("join with admin.cred: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(admin.config, "peekaboo.cred")); err == nil {
		t.Fatal("join with admin.cred stored it")
	}

	// A pseudonym for a user who is not registered, or who has not joined yet: each error
	// says which, and what to do (both read "they run 'veil peekaboo join' again").
	op.mustRun(t, "peekaboo", "vserver", "adduser", "bob", "--admin-cred", filepath.Join(vdir, "admin.cred"), "--out", filepath.Join(dir, "bob.pkb"))
	for who, want := range map[string]string{"bob": `"bob" has no client key registered yet: they must run 'veil peekaboo join'`, "bbo": `no user "bbo" is registered`} {
		if _, errs, code := alice.run(t, "peekaboo", "publish", "plan.txt", "v", "--pseudonym-for", who); code != 1 || !strings.Contains(errs, want) {
			t.Fatalf("publish --pseudonym-for %s: exit %d, %q; want %q", who, code, errs, want)
		}
	}
	if out := alice.mustRun(t, "peekaboo", "search", "--private-query", "thesis.pdf"); strings.TrimSpace(out) != "host-t:/thesis" {
		t.Fatalf("private query through standalone servers: %q", out)
	}
}

// TestPeekabooEndpointHostInCertificates: servers whose endpoints name a host other than
// 127.0.0.1 or localhost (here 127.0.0.2, on loopback), inited without --host: their
// certificates cover the endpoint's host, so the V-server can relay to the K-server and
// users reach the V-server. Before, every request failed certificate verification until
// the operator guessed --host.
func TestPeekabooEndpointHostInCertificates(t *testing.T) {
	dir := t.TempDir()
	kdir, vdir := filepath.Join(dir, "k"), filepath.Join(dir, "v")
	kaddr, vaddr := "127.0.0.2:"+strconv.Itoa(testutil.FreePort(t)), "127.0.0.2:"+strconv.Itoa(testutil.FreePort(t))
	op := &user{name: "operator", config: filepath.Join(dir, "op")}
	op.mustRun(t, "peekaboo", "kserver", "init", "--dir", kdir, "--endpoint", "https://"+kaddr, "--pir-bits", "6", "--pir-slots", "8")
	testutil.Start(t, veilBin, "peekaboo", "kserver", "serve", "--dir", kdir, "--listen", kaddr)
	testutil.WaitTCP(t, kaddr, 20*time.Second)
	op.mustRun(t, "peekaboo", "vserver", "init", "--dir", vdir, "--relay-cred", filepath.Join(kdir, "relay.cred"), "--endpoint", "https://"+vaddr)
	testutil.Start(t, veilBin, "peekaboo", "vserver", "serve", "--dir", vdir, "--listen", vaddr)
	testutil.WaitTCP(t, vaddr, 20*time.Second)
	cred := filepath.Join(dir, "alice.pkb")
	op.mustRun(t, "peekaboo", "vserver", "adduser", "alice", "--admin-cred", filepath.Join(vdir, "admin.cred"), "--out", cred)
	alice := &user{name: "alice", config: filepath.Join(dir, "alice")}
	alice.mustRun(t, "peekaboo", "join", cred)
	alice.mustRun(t, "peekaboo", "publish", "thesis.pdf", "host-t:/thesis")
	if out := alice.mustRun(t, "peekaboo", "search", "thesis.pdf"); strings.TrimSpace(out) != "host-t:/thesis" {
		t.Fatalf("search: %q", out)
	}
}

// TestSearchWhenKServerStopped: a K-server that stops answering (SIGSTOP: its kernel
// still takes connections) makes a search wait the V-server's --relay-timeout, and the
// error now says what happened, in one line, as the V-server answers it and the client
// shows it; it read "k-server unavailable: Post \"https://...\": context deadline
// exceeded". A private search says the same.
func TestSearchWhenKServerStopped(t *testing.T) {
	dir := t.TempDir()
	kdir, vdir := filepath.Join(dir, "k"), filepath.Join(dir, "v")
	kaddr, vaddr := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	op := &user{name: "operator", config: filepath.Join(dir, "op")}
	op.mustRun(t, "peekaboo", "kserver", "init", "--dir", kdir, "--endpoint", "https://"+kaddr, "--pir-bits", "6", "--pir-slots", "8")
	k := testutil.Start(t, veilBin, "peekaboo", "kserver", "serve", "--dir", kdir, "--listen", kaddr)
	testutil.WaitTCP(t, kaddr, 20*time.Second)
	op.mustRun(t, "peekaboo", "vserver", "init", "--dir", vdir, "--relay-cred", filepath.Join(kdir, "relay.cred"), "--endpoint", "https://"+vaddr)
	testutil.Start(t, veilBin, "peekaboo", "vserver", "serve", "--dir", vdir, "--listen", vaddr, "--relay-timeout", "2s")
	testutil.WaitTCP(t, vaddr, 20*time.Second)
	cred := filepath.Join(dir, "alice.pkb")
	op.mustRun(t, "peekaboo", "vserver", "adduser", "alice", "--admin-cred", filepath.Join(vdir, "admin.cred"), "--out", cred)
	alice := &user{name: "alice", config: filepath.Join(dir, "alice")}
	alice.mustRun(t, "peekaboo", "join", cred)
	alice.mustRun(t, "peekaboo", "publish", "thesis.pdf", "host-t:/thesis")

	k.Cmd.Process.Signal(syscall.SIGSTOP)
	defer k.Cmd.Process.Signal(syscall.SIGCONT)
	for _, args := range [][]string{{"peekaboo", "search", "thesis.pdf"}, {"peekaboo", "search", "--private-query", "thesis.pdf"}} {
		start := time.Now()
		_, errs, code := alice.run(t, args...)
		took := time.Since(start)
		t.Logf("%s: exit %d after %v: %s", strings.Join(args, " "), code, took, errs)
		if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "deadline exceeded") ||
			!strings.Contains(errs, "the K-server did not answer within 2s (the V-server's --relay-timeout)") || !strings.Contains(errs, "try again later") ||
			took < 2*time.Second || took > 20*time.Second {
			t.Fatalf("%s with the K-server stopped: exit %d after %v: %q", strings.Join(args, " "), code, took, errs)
		}
	}
}
