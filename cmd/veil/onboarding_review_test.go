package main

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/allinone"
	"github.com/veil-project/veil/internal/testutil"
)

// The README waits for <dir>/invites/NAME.invite to appear and runs 'veil init --invite'
// on it at once. The invitation (and the Peekaboo credential beside it) must therefore
// appear under its final name only complete: written to a temporary name and renamed.
// os.WriteFile created the file empty under its final name and wrote it afterwards, so a
// script could read an empty or partial invitation. Checked with inotify: no IN_CREATE or
// IN_MODIFY may name the final file (an atomic write shows only IN_MOVED_TO).
func TestWriteInviteAppearsOnlyComplete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server")
	a := func() string { return testutil.Addr(testutil.FreePort(t)) }
	if _, err := allinone.Init(dir, allinone.Config{KSAddr: a(), KSUDP: a(), StoreAddr: a(), PkbKAddr: a(), PkbVAddr: a()}); err != nil {
		t.Fatal(err)
	}
	invites := filepath.Join(dir, "invites")
	if err := os.MkdirAll(invites, 0o700); err != nil {
		t.Fatal(err)
	}
	written := testutil.WatchWrites(t, invites)
	if _, err := writeInvite(dir, "alice"); err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, ev := range written() {
		if strings.HasSuffix(ev, " alice.invite") || strings.HasSuffix(ev, " alice.peekaboo") {
			events = append(events, ev)
		}
	}
	if len(events) > 0 {
		t.Fatalf("the invitation files were written in place, visible before complete: %v", events)
	}
	for _, f := range []string{"alice.invite", "alice.peekaboo"} {
		if fi, err := os.Stat(filepath.Join(invites, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi, err)
		}
	}
}

// Restarting 'veil serve' with the same --user list must work once a user's invitation is
// gone (handed over and deleted, as a file holding her secrets should be, or never written
// because the previous run died right after registering her). The restart tried to
// register her again, the store refused ("exists"), and 'veil serve' stopped: a service
// unit with a fixed --user list could no longer start. The user is already registered:
// the run must say so and serve (and still invite the new users).
func TestE2EServeRestartAfterInvitationRemoved(t *testing.T) {
	d := startServe(t, "alice")
	d.proc.Kill()
	for _, f := range []string{"alice.invite", "alice.peekaboo"} {
		if err := os.Remove(filepath.Join(d.dir, "invites", f)); err != nil {
			t.Fatal(err)
		}
	}
	p := testutil.Start(t, veilBin, "serve", "--dir", d.dir, "--user", "alice", "--user", "bob")
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(p.Output(), "veil serve: key server") {
		select {
		case <-p.Done():
			t.Fatalf("veil serve stopped on restart with the same --user list:\n%s", p.Output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("veil serve did not come up:\n%s", p.Output())
		}
	}
	if _, err := os.Stat(filepath.Join(d.dir, "invites", "bob.invite")); err != nil {
		t.Fatalf("the new user got no invitation: %v\n%s", err, p.Output())
	}
	if !strings.Contains(p.Output(), "alice is already registered and "+filepath.Join(d.dir, "invites", "alice.invite")) {
		t.Fatalf("nothing said about alice, already registered:\n%s", p.Output())
	}
}

// 'veil store user add NAME --out FILE' creates the user, then writes the credential: the
// only copy of the secret (the store keeps its hash). When the file cannot be written (a
// mistyped directory, a full disk) the user stayed registered with a secret nobody has,
// and adding the name again was refused for good. The key server's 'client add --out'
// registers the client only once the file is written; the store must leave no user
// behind either.
func TestStoreUserAddOutFailureLeavesNoUser(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if out, err := execVeil("store", "init", "--dir", dir); err != nil {
		t.Fatalf("store init: %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "no-such-dir", "alice.cred")
	if out, err := execVeil("store", "user", "add", "alice", "--dir", dir, "--out", bad); err == nil {
		t.Fatalf("user add to an unwritable file succeeded: %s", out)
	}
	good := filepath.Join(t.TempDir(), "alice.cred")
	if out, err := execVeil("store", "user", "add", "alice", "--dir", dir, "--out", good); err != nil {
		t.Fatalf("user add after a failed write: %v\n%s", err, out)
	}
	if fi, err := os.Stat(good); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credential: %v %v", fi, err)
	}
}

// A --user name is checked before it becomes a path, and the store's administrator is not
// taken for a user registered by an earlier run (which a restart now passes over).
func TestWriteInviteRefusesBadNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server")
	for _, name := range []string{"../alice", "admin"} {
		if _, err := writeInvite(dir, name); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("writeInvite(%q): %v", name, err)
		}
	}
}

// 'veil keyserver init --url https://HOST:PORT' writes that URL into every credential, and
// clients verify the server's certificate for HOST. Without a matching --host the
// certificate named only the defaults (127.0.0.1, ::1, localhost): every client of
// that key server failed its TLS handshake. The URL's host must be in the certificate.
func TestKeyserverInitCertificateCoversURLHost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ks")
	if out, err := execVeil("keyserver", "init", "--dir", dir, "--url", "https://ks.example.org:7443"); err != nil {
		t.Fatalf("keyserver init: %v\n%s", err, out)
	}
	load := func(name string) *x509.Certificate {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	roots := x509.NewCertPool()
	roots.AddCert(load("ca.crt"))
	_, err := load("server.crt").Verify(x509.VerifyOptions{DNSName: "ks.example.org", Roots: roots})
	if err != nil {
		t.Fatalf("a client of https://ks.example.org:7443 would refuse the key server: %v", err)
	}
}

// writeInvite writes the invitation, then registers the user with Peekaboo and writes the
// credential beside it (what startServe waits for). A run stopped in between (the
// Peekaboo registration failed, or the process died) left an invitation without it, and
// every later run took the invitation for "already registered": the user never got a
// Peekaboo credential.
func TestWriteInviteFinishesPeekabooAfterInterruptedRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server")
	a := func() string { return testutil.Addr(testutil.FreePort(t)) }
	if _, err := allinone.Init(dir, allinone.Config{KSAddr: a(), KSUDP: a(), StoreAddr: a(), PkbKAddr: a(), PkbVAddr: a()}); err != nil {
		t.Fatal(err)
	}
	b, err := allinone.AddUser(dir, "alice") // what the interrupted run did
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "invites"), 0o700)
	if err := os.WriteFile(filepath.Join(dir, "invites", "alice.invite"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := writeInvite(dir, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "invites", "alice.peekaboo")); err != nil {
		t.Fatalf("the next run left alice without a Peekaboo credential: %v", err)
	}
}
