package kswire

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// testdata/ks/credential.json is a credential written by 'veil keyserver client add'
// (test-only keys). It must parse, and re-encode byte for byte.
func TestCredentialVector(t *testing.T) {
	b, err := os.ReadFile("../../testdata/ks/credential.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseCredential(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "test-vector" || p.Current == nil || p.SuiteID.String() != "ristretto255" {
		t.Fatalf("parsed: %+v", p.Credential)
	}
	if out, _ := MarshalCredential(&p.Credential); !bytes.Equal(out, b) {
		t.Fatal("credential does not re-encode byte for byte")
	}
	mutate := func(name, from, to string) {
		t.Helper()
		m := strings.Replace(string(b), from, to, 1)
		if m == string(b) {
			t.Fatalf("%s: mutation did not apply", name)
		}
		if _, err := ParseCredential([]byte(m)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: got %v, want ErrMalformed", name, err)
		}
	}
	mutate("version 2", `"version": 1`, `"version": 2`)
	mutate("unknown suite", `"suite": "ristretto255"`, `"suite": "p256"`)
	mutate("key id mismatch", `"id": "`+p.CurrentKey, `"id": "00`+p.CurrentKey[2:])
	mutate("current key absent", `"current_key": "`+p.CurrentKey, `"current_key": "ff`+p.CurrentKey[2:])
	mutate("plain http url", `"url": "https://`, `"url": "http://`)
	mutate("no CA", `"ca_pem": "-----BEGIN CERTIFICATE-----`, `"ca_pem": "`)
	mutate("truncated", `}`, ``)
}
