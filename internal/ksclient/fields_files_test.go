package ksclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
)

// Field-by-field audit of the key server's files (docs/security.md, "ObliviSync and the key server: every field"): the
// client's credential and the server's directory. Both are local files protected by file
// modes (0600 in a 0700 directory), not by cryptography, and no server holds or sends the
// other party's copy; these tests show what each field controls when it changes.

func jsonMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func editJSON(t *testing.T, b []byte, f func(m map[string]any)) []byte {
	t.Helper()
	m := jsonMap(t, b)
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func firstKey(m map[string]any) map[string]any { return m["keys"].([]any)[0].(map[string]any) }

func TestFieldsCredential(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	u := issue(t, k, "alice")
	u2 := issue(t, k, "bob")
	other := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	o := jsonMap(t, issue(t, other, "olga").raw)
	bob := jsonMap(t, u2.raw)

	parseErr := []struct {
		name string
		edit func(m map[string]any)
		text string
	}{
		{"version", func(m map[string]any) { m["version"] = 2 }, "credential version 2"},
		{"suite (unknown)", func(m map[string]any) { m["suite"] = "p256" }, `credential suite "p256"`},
		{"suite (the other one)", func(m map[string]any) { m["suite"] = "rsa" }, "key " + u.parsed.Current.ID().String()},
		{"current_key", func(m map[string]any) { m["current_key"] = "0011223344556677" }, "is not among the credential's keys"},
		{"keys id", func(m map[string]any) { firstKey(m)["id"] = "0011223344556677" }, "does not match its public key"},
		{"keys public (not base64)", func(m map[string]any) { firstKey(m)["public"] = "!!" }, "not base64"},
		{"keys public (another key)", func(m map[string]any) { firstKey(m)["public"] = firstKey(o)["public"] }, "does not match its public key"},
		{"ca_pem", func(m map[string]any) { m["ca_pem"] = "garbage" }, "no CA certificate"},
		{"cert_pem (another client's)", func(m map[string]any) { m["cert_pem"] = bob["cert_pem"] }, "client certificate"},
		{"key_pem (another client's)", func(m map[string]any) { m["key_pem"] = bob["key_pem"] }, "client certificate"},
		{"url (not https)", func(m map[string]any) { m["url"] = strings.Replace(m["url"].(string), "https", "http", 1) }, "is not https"},
	}
	for _, c := range parseErr {
		t.Run(c.name, func(t *testing.T) {
			_, err := ksclient.ParseCredential(editJSON(t, u.raw, c.edit))
			if err == nil || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("got %v, want an error naming %q", err, c.text)
			}
		})
	}
	derive := func(t *testing.T, edit func(m map[string]any), transport string) error {
		t.Helper()
		cred, err := ksclient.ParseCredential(editJSON(t, u.raw, edit))
		if err != nil {
			t.Fatal(err)
		}
		cl := k.client(cred, transport, fast)
		_, err = cl.DeriveKeys(context.Background(), digestsN(1, "cred"))
		return err
	}
	// Fields that parse but point elsewhere: the client reaches no key, it never accepts one.
	t.Run("keys and current_key (another key server's key, consistently)", func(t *testing.T) {
		err := derive(t, func(m map[string]any) { m["keys"], m["current_key"] = o["keys"], o["current_key"] }, "https")
		wantIs(t, err, ksclient.ErrUnexpected, "is not served here")
	})
	t.Run("ca_pem (another key server's CA)", func(t *testing.T) {
		err := derive(t, func(m map[string]any) { m["ca_pem"] = o["ca_pem"] }, "https")
		wantIs(t, err, ksclient.ErrKSUnavailable, "certificate signed by unknown authority")
	})
	t.Run("cert_pem and key_pem (another key server's client)", func(t *testing.T) {
		err := derive(t, func(m map[string]any) { m["cert_pem"], m["key_pem"] = o["cert_pem"], o["key_pem"] }, "https")
		if !errors.Is(err, ksclient.ErrKSUnavailable) && !errors.Is(err, ksclient.ErrUnauthorized) {
			t.Fatalf("got %v, want the key server to refuse the certificate", err)
		}
	})
	t.Run("url (another server)", func(t *testing.T) {
		err := derive(t, func(m map[string]any) { m["url"] = "https://" + other.ls.Addr() }, "https")
		wantIs(t, err, ksclient.ErrKSUnavailable, "certificate signed by unknown authority")
	})
	t.Run("udp (another server's UDP port)", func(t *testing.T) {
		err := derive(t, func(m map[string]any) { m["udp"] = other.ls.PacketAddr() }, "udp")
		wantIs(t, err, ksclient.ErrKSUnavailable, "")
	})
	t.Run("name (harmless: the server knows the client by its certificate)", func(t *testing.T) {
		if err := derive(t, func(m map[string]any) { m["name"] = "bob" }, "https"); err != nil {
			t.Fatal(err)
		}
		if err := keyserver.RevokeClient(k.dir, "alice"); err != nil {
			t.Fatal(err)
		}
		k.reloadAll()
		err := derive(t, func(m map[string]any) { m["name"] = "bob" }, "https")
		wantIs(t, err, ksclient.ErrUnauthorized, "")
	})
}

// startErr opens a key server on dir and returns the error (closing it if it opened).
func startErr(t *testing.T, dir string) error {
	t.Helper()
	srv, err := keyserver.Open(context.Background(), dir, keyserver.Config{})
	if err != nil {
		return err
	}
	return srv.Close()
}

func editFile(t *testing.T, path string, f func(m map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, editJSON(t, b, f), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ks.json and keys/: every field is checked against the key files when the server loads.
func TestFieldsKSDir(t *testing.T) {
	src := initDir(t, "ristretto255")
	anotherDir := initDir(t, "ristretto255")
	ents, _ := os.ReadDir(filepath.Join(anotherDir, "keys"))
	anotherKey, _ := os.ReadFile(filepath.Join(anotherDir, "keys", ents[0].Name()))
	m := jsonMap(t, must(os.ReadFile(filepath.Join(src, "ks.json"))))
	id := m["current_key"].(string)
	fresh := func(t *testing.T) string {
		t.Helper()
		dir := t.TempDir()
		copyTree(t, src, dir)
		return dir
	}
	cases := []struct {
		name string
		edit func(dir string)
		text string
	}{
		{"version", func(d string) { editFile(t, filepath.Join(d, "ks.json"), func(m map[string]any) { m["version"] = 2 }) }, "ks.json: version 2, want 1"},
		{"suite (unknown)", func(d string) {
			editFile(t, filepath.Join(d, "ks.json"), func(m map[string]any) { m["suite"] = "p256" })
		}, "p256"},
		{"suite (the other one)", func(d string) {
			editFile(t, filepath.Join(d, "ks.json"), func(m map[string]any) { m["suite"] = "rsa" })
		}, "key " + id},
		{"current_key", func(d string) {
			editFile(t, filepath.Join(d, "ks.json"), func(m map[string]any) { m["current_key"] = "0011223344556677" })
		}, "current key 0011223344556677 is not in the ring"},
		{"keys (no such key file)", func(d string) {
			editFile(t, filepath.Join(d, "ks.json"), func(m map[string]any) { m["keys"] = []string{id, "0011223344556677"} })
		}, "key 0011223344556677"},
		{"keys/<id>.key (another key)", func(d string) { os.WriteFile(filepath.Join(d, "keys", id+".key"), anotherKey, 0o600) }, "file holds key"},
		{"keys/<id>.key (truncated)", func(d string) { os.WriteFile(filepath.Join(d, "keys", id+".key"), anotherKey[:31], 0o600) }, "key " + id},
		{"clients.json version", func(d string) {
			editFile(t, filepath.Join(d, "clients.json"), func(m map[string]any) { m["version"] = 2 })
		}, "clients.json: version 2, want 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fresh(t)
			c.edit(dir)
			err := startErr(t, dir)
			if err == nil || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("got %v, want an error naming %q", err, c.text)
			}
		})
	}
	// url, udp and hosts are what init and 'client add' write into new credentials and the
	// server certificate; the running server does not use them.
	t.Run("url, udp and hosts (harmless: only copied into new credentials)", func(t *testing.T) {
		dir := fresh(t)
		editFile(t, filepath.Join(dir, "ks.json"), func(m map[string]any) {
			m["url"], m["udp"], m["hosts"] = "https://example.invalid:1", "example.invalid:2", []string{"example.invalid"}
		})
		k := startKS(t, dir, keyserver.Config{})
		b, err := keyserver.AddClient(dir, "carol", keyserver.AddOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := jsonMap(t, b); c["url"] != "https://example.invalid:1" || c["udp"] != "example.invalid:2" {
			t.Fatalf("credential carries %v %v", c["url"], c["udp"])
		}
		k.reloadAll()
		cred := must(ksclient.ParseCredential(b))
		if _, err := k.client(cred, "https", ksclient.Options{URL: "https://" + k.ls.Addr()}).DeriveKeys(context.Background(), digestsN(1, "x")); err != nil {
			t.Fatal(err)
		}
	})
}

// clients.json entries: the serial is the client's identity; revoked refuses it; name is
// its rate-limit account; added and expires are informational (TLS checks the
// certificate's own validity).
func TestFieldsClientRegistry(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	u := issue(t, k, "alice")
	path := filepath.Join(k.dir, "clients.json")
	orig := must(os.ReadFile(path))
	derive := func() error {
		k.reloadAll()
		cl := k.client(u.cred, "https", fast)
		_, err := cl.DeriveKeys(context.Background(), digestsN(1, "registry"))
		return err
	}
	entry := func(m map[string]any) map[string]any { return m["clients"].([]any)[0].(map[string]any) }
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		class error
	}{
		{"serial", func(m map[string]any) { entry(m)["serial"] = "1234" }, ksclient.ErrUnauthorized},
		{"revoked", func(m map[string]any) { entry(m)["revoked"] = time.Now().UTC().Format(time.RFC3339) }, ksclient.ErrUnauthorized},
		{"expires (harmless)", func(m map[string]any) { entry(m)["expires"] = "2000-01-01T00:00:00Z" }, nil},
		{"added (harmless)", func(m map[string]any) { entry(m)["added"] = "2000-01-01T00:00:00Z" }, nil},
		{"name (harmless: the rate-limit account)", func(m map[string]any) { entry(m)["name"] = "renamed" }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(path, editJSON(t, orig, c.edit), 0o600)
			err := derive()
			if c.class == nil && err != nil || c.class != nil && !errors.Is(err, c.class) {
				t.Fatalf("got %v, want %v", err, c.class)
			}
		})
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
