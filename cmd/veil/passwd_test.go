package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// veil passwd re-seals the key: files stay readable with the new passphrase only, and a
// wrong current passphrase changes nothing.
func TestE2EPasswd(t *testing.T) {
	u := newUser(t, "carol", "--storage", t.TempDir(), "--no-keyserver")
	src := filepath.Join(t.TempDir(), "note.txt")
	want := randomFile(t, src, 5000, 7)
	u.mustRun(t, "put", "-q", src)
	keyFile := filepath.Join(u.config, "key")
	before, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}

	newPass := filepath.Join(t.TempDir(), "new")
	os.WriteFile(newPass, []byte("a new passphrase\n"), 0o600)
	wrong := filepath.Join(t.TempDir(), "wrong")
	os.WriteFile(wrong, []byte("not the passphrase\n"), 0o600)
	if _, errs, code := u.run(t, "passwd", "--password-file", wrong, "--new-password-file", newPass); code == 0 || !strings.Contains(errs, "wrong passphrase") {
		t.Fatalf("passwd with a wrong current passphrase: exit %d, %q", code, errs)
	}
	if after, _ := os.ReadFile(keyFile); !bytes.Equal(after, before) {
		t.Fatal("a refused passwd changed the key file")
	}

	u.mustRun(t, "passwd", "--new-password-file", newPass)
	if _, errs, code := u.run(t, "ls"); code == 0 || !strings.Contains(errs, "wrong passphrase") {
		t.Fatalf("old passphrase after passwd: exit %d, %q", code, errs)
	}
	u.passFile = newPass
	out := filepath.Join(t.TempDir(), "out")
	u.mustRun(t, "get", "-q", "note.txt", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("file differs after the passphrase change")
	}
}
