package profile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/keyserver"
)

func TestInitOpenAndOverrides(t *testing.T) {
	dupless.TestOnlyUseLowCostKDF()
	ks := filepath.Join(t.TempDir(), "ks")
	if err := keyserver.Init(ks, keyserver.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	cred, err := keyserver.AddClient(ks, "alice", keyserver.AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir, store := filepath.Join(t.TempDir(), "p"), t.TempDir()
	if _, err := Init(context.Background(), dir, []byte("pw"), InitOptions{Storage: store}); err == nil || !strings.Contains(err.Error(), "key server credential") {
		t.Fatalf("init without a key server credential: %v", err)
	}
	if _, err := Init(context.Background(), dir, []byte("pw"), InitOptions{Storage: store, KSCredRaw: []byte("{}")}); err == nil {
		t.Fatal("a broken key server credential was accepted")
	}
	if _, err := Init(context.Background(), dir, []byte("pw"), InitOptions{Storage: store, KSCredRaw: cred, KSTimeout: "soon"}); err == nil {
		t.Fatal("a bad timeout was accepted")
	}
	if _, err := Init(context.Background(), dir, []byte("pw"), InitOptions{Storage: store, KSCredRaw: cred}); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(context.Background(), dir, []byte("pw"), InitOptions{Storage: store, KSCredRaw: cred}); err == nil {
		t.Fatal("init overwrote an existing key")
	}
	for _, f := range []string{KeyFile, KSCredFile, ConfigFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}
	if _, _, err := Open(context.Background(), dir, []byte("wrong"), ClientOptions{}); !errors.Is(err, dupless.ErrWrongPassphrase) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	c, done, err := Open(context.Background(), dir, []byte("pw"), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done()
	_ = c
	other := t.TempDir()
	cfg, err := Load(dir, EnvOverrides(func(k string) string { return map[string]string{EnvStorage: other}[k] }))
	if err != nil || cfg.Storage != other {
		t.Fatalf("VEIL_STORAGE did not override: %+v %v", cfg, err)
	}
	if _, err := Load(t.TempDir(), Overrides{}); err == nil || !strings.Contains(err.Error(), "veil init") {
		t.Fatalf("missing profile: %v", err)
	}
}

// A second 'veil init' on a location the first init owns is refused even before the first
// profile stored anything: init claims the location (its key check). Found by review: the
// second key was accepted, and each key then found the other's location foreign.
func TestSecondInitOnOneLocationRefusedBeforeAnyPut(t *testing.T) {
	dupless.TestOnlyUseLowCostKDF()
	store := t.TempDir()
	first, second := filepath.Join(t.TempDir(), "p1"), filepath.Join(t.TempDir(), "p2")
	if _, err := Init(context.Background(), first, []byte("pw"), InitOptions{Storage: store, NoKS: true}); err != nil {
		t.Fatal(err)
	}
	_, err := Init(context.Background(), second, []byte("pw"), InitOptions{Storage: store, NoKS: true})
	if err == nil || !strings.Contains(err.Error(), "another veil key") {
		t.Fatalf("a second init on a location the first init owns: %v", err)
	}
	if _, err := os.Stat(filepath.Join(second, KeyFile)); err == nil {
		t.Fatal("the refused init left a key file")
	}
}

// The weak-passphrase warning counts in English: "1 character", "3 characters" (found by a
// user walkthrough: "a passphrase of 1 characters").
func TestWeakPassphraseWording(t *testing.T) {
	for p, want := range map[string]string{"x": "a passphrase of 1 character is", "abc": "a passphrase of 3 characters is"} {
		if got := WeakPassphrase([]byte(p)); !strings.Contains(got, want) {
			t.Errorf("WeakPassphrase(%q) = %q, want %q", p, got, want)
		}
	}
	if got := WeakPassphrase([]byte("correct horse battery")); got != "" {
		t.Errorf("a long passphrase warned: %q", got)
	}
}
