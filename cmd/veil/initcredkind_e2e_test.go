package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A credential or invitation given to the wrong flag of init is named for what it is, with
// the flag that takes it, and a missing file names its flag; nothing is written. They were
// the parser's words ("kswire: malformed message: credential version 0, want 1", "remote:
// bad credential: secret must be 32 bytes of unpadded base64url", "open x: no such file or
// directory"; found by a user walkthrough).
func TestE2EInitNamesCredentialOfTheWrongFlag(t *testing.T) {
	storeDir, ksDir, creds := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "ks"), t.TempDir()
	storeCred, ksCred := filepath.Join(creds, "alice.cred"), filepath.Join(creds, "alice.ks.json")
	for _, args := range [][]string{
		{"store", "init", "--dir", storeDir},
		{"store", "user", "add", "alice", "--dir", storeDir, "--out", storeCred},
		{"keyserver", "init", "--dir", ksDir, "--udp", "-"},
		{"keyserver", "client", "add", "alice", "--dir", ksDir, "--out", ksCred},
	} {
		if out, errs, code := opVeil(t, args...); code != 0 {
			t.Fatalf("veil %v: exit %d %s %s", args, code, out, errs)
		}
	}
	missing := filepath.Join(creds, "missing.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ks-credential", storeCred}, "veil: the key server credential is a storage service credential: give it as --store-credential\n"},
		{[]string{"--no-keyserver", "--storage", "veil://127.0.0.1:1", "--store-credential", ksCred},
			"veil: the store credential is a key server credential: give it as --ks-credential\n"},
		{[]string{"--invite", storeCred}, "veil: the invitation is a storage service credential: give it as --store-credential\n"},
		{[]string{"--invite", ksCred}, "veil: the invitation is a key server credential: give it as --ks-credential\n"},
		{[]string{"--ks-credential", missing}, "veil: --ks-credential: open " + missing + ": no such file or directory\n"},
	} {
		u := &user{name: "alice", config: filepath.Join(t.TempDir(), "profile"), passFile: filepath.Join(t.TempDir(), "pass")}
		os.WriteFile(u.passFile, []byte("passphrase of alice\n"), 0o600)
		storage := filepath.Join(t.TempDir(), "storage")
		args := append([]string{"init", "--storage", storage}, c.args...)
		if _, errs, code := u.run(t, args...); code != 1 || errs != c.want {
			t.Errorf("veil %v: exit %d, stderr %q; want exit 1, %q", c.args, code, errs, c.want)
		}
		for _, dir := range []string{u.config, storage} {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("veil %v refused, but made %s", c.args, dir)
			}
		}
	}
}
