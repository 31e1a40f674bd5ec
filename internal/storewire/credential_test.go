package storewire

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// credentialVector is one vector of testdata/storewire/credentials.json.
type credentialVector struct {
	Desc    string          `json:"desc"`
	File    json.RawMessage `json:"file"`
	Outcome string          `json:"outcome"` // "ok" or "bad credential"
	User    string          `json:"user,omitempty"`
}

func TestCredentialVectors(t *testing.T) {
	data, err := os.ReadFile("../../testdata/storewire/credentials.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []credentialVector
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 5 {
		t.Fatalf("only %d vectors", len(vs))
	}
	for _, v := range vs {
		c, err := ParseCredential(v.File)
		if v.Outcome != "ok" {
			if !errors.Is(err, ErrBadCredential) {
				t.Fatalf("%s: must fail, got %v", v.Desc, err)
			}
			continue
		}
		if err != nil || c.User != v.User {
			t.Fatalf("%s: %+v %v", v.Desc, c, err)
		}
		again, err := ParseCredential(c.Marshal())
		if err != nil || again != c {
			t.Fatalf("%s: does not survive Marshal: %v", v.Desc, err)
		}
	}
}

func FuzzParseCredential(f *testing.F) {
	data, _ := os.ReadFile("../../testdata/storewire/credentials.json")
	var vs []credentialVector
	json.Unmarshal(data, &vs)
	for _, v := range vs {
		f.Add([]byte(v.File))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCredential(b)
		if err != nil {
			if !errors.Is(err, ErrBadCredential) {
				t.Fatalf("error %v is not ErrBadCredential", err)
			}
			return
		}
		if _, err := ParseCredential(c.Marshal()); err != nil {
			t.Fatalf("parsed credential does not re-parse: %v", err)
		}
	})
}
