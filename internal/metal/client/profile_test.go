package client

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
)

func TestMain(m *testing.M) {
	TestOnlyUseLowCostKDF()
	os.Exit(m.Run())
}

// TestProfileSealed: metal.json holds no capability or deployment in the clear, opens only
// with its passphrase, refuses damage with one line, re-seals under a new passphrase, and
// an unsealed file of an earlier version is read once and written sealed.
func TestProfileSealed(t *testing.T) {
	dir := t.TempDir()
	d := access.Deployment{Version: 1, Server1: "https://s1.example:1", Server2: "https://s2.example:2", CA1: "ca1", CA2: "ca2"}
	p, err := Join(dir, []byte("pass one"), d)
	if err != nil {
		t.Fatal(err)
	}
	p.Add(Account{Capability: make([]byte, 48), First: 32, Count: 16})
	p.Record(Span{First: 32, Segments: 2, Size: 50})
	if err := p.Save(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ProfileFile)
	b, _ := os.ReadFile(path)
	for _, s := range []string{"s1.example", "capability", "000000000000", "deployment"} {
		if strings.Contains(string(b), s) {
			t.Fatalf("metal.json shows %q in the clear", s)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	q, err := LoadProfile(dir, []byte("pass one"))
	if err != nil || q.Deployment.Server1 != d.Server1 || len(q.Accounts) != 1 || len(q.Files) != 1 || q.Files[0].Size != 50 {
		t.Fatalf("reopened: %+v %v", q, err)
	}
	if _, err := LoadProfile(dir, []byte("pass two")); err == nil || err.Error() != "metal.json: wrong passphrase (or the file is damaged)" {
		t.Fatalf("wrong passphrase: %v", err)
	}
	for name, mut := range map[string]func([]byte) []byte{
		"ciphertext": func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"truncated":  func(b []byte) []byte { return b[:50] },
		"version":    func(b []byte) []byte { b[len("veil-metal")] = 9; return b },
	} {
		os.WriteFile(path, mut(append([]byte{}, b...)), 0o600)
		_, err := LoadProfile(dir, []byte("pass one"))
		if err == nil || !strings.HasPrefix(err.Error(), "metal.json: ") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	os.WriteFile(path, b, 0o600)
	if err := ChangePassphrase(dir, []byte("pass one"), []byte("pass two")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProfile(dir, []byte("pass one")); err == nil {
		t.Fatal("the old passphrase still opens it")
	}
	if q, err := LoadProfile(dir, []byte("pass two")); err != nil || len(q.Accounts) != 1 {
		t.Fatalf("new passphrase: %v", err)
	}
	if _, err := Join(dir, []byte("pass two"), access.Deployment{Server1: "https://other"}); err == nil || !strings.Contains(err.Error(), "another Metal deployment") {
		t.Fatalf("join of another deployment: %v", err)
	}

	// The unsealed JSON earlier versions wrote: no command seals it under whatever
	// passphrase it was given (a mistyped one would lock the file); Seal does, once.
	old, _ := json.Marshal(map[string]any{"version": 1, "deployment": d, "accounts": []AccountRecord{{Capability: strings.Repeat("ab", 48), First: 0, Count: 2}}})
	os.WriteFile(path, old, 0o600)
	if q, err := LoadProfile(dir, []byte("typo")); err != ErrUnsealed || q != nil {
		t.Fatalf("an unsealed profile loaded: %+v, %v", q, err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, old) {
		t.Fatal("loading changed the unsealed profile")
	}
	if u, err := Unsealed(dir); !u || err != nil {
		t.Fatalf("Unsealed: %v, %v", u, err)
	}
	if err := Seal(dir, []byte("new pass")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "abab") || !isSealed(b) {
		t.Fatal("profile not sealed")
	}
	if err := Seal(dir, []byte("other")); err == nil || !strings.Contains(err.Error(), "already sealed") {
		t.Fatalf("sealing a sealed profile: %v", err)
	}
	if q, err := LoadProfile(dir, []byte("new pass")); err != nil || q.Accounts[0].Count != 2 {
		t.Fatalf("after sealing: %v", err)
	}
	// veil passwd on an unsealed profile seals it under the new passphrase.
	os.WriteFile(path, old, 0o600)
	if err := ChangePassphrase(dir, []byte("anything"), []byte("third pass")); err != nil {
		t.Fatal(err)
	}
	if q, err := LoadProfile(dir, []byte("third pass")); err != nil || q.Accounts[0].Count != 2 {
		t.Fatalf("after passwd of an unsealed profile: %v", err)
	}
	if err := Exists(t.TempDir()); err != ErrNoProfile {
		t.Fatalf("Exists on an empty dir: %v", err)
	}
}

// FuzzParseProfile: any metal.json bytes give a profile or a one-line error, never a
// panic. Inputs whose KDF costs exceed a fuzzing budget are skipped (the format's own
// bounds, 100 passes and 4 GiB, are checked by sealedkey's Parse before any work).
func FuzzParseProfile(f *testing.F) {
	pass := []byte("fuzz")
	s, _ := newSealing(pass)
	for _, plain := range []string{`{"version":1,"accounts":[{"capability":"00","first":1,"count":2}],"files":[{"first":1,"segments":2,"size":3}]}`, `{}`, `null`} {
		b, _ := s.seal([]byte(plain))
		f.Add(b)
		f.Add([]byte(plain))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if isSealed(b) && len(b) >= profileKeyFormat.Size() {
			if h, err := profileKeyFormat.Parse(b[:profileKeyFormat.Size()]); err == nil && (h.KDF.Time > 2 || h.KDF.MemoryKiB > 256) {
				t.Skip("KDF costs beyond the fuzzing budget")
			}
		}
		p, err := parseProfile(b, pass)
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), ProfileFile+": ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if p.Version != 1 || isSealed(b) != (p.seal != nil) {
			t.Fatalf("accepted %+v", p)
		}
	})
}
