package testutil

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update makes Vectors rewrite vector files from their generators: `go test -update`. A
// rewritten vector is a format change; the commit must say why.
var Update = flag.Bool("update", false, "rewrite testdata vectors from their generators (a format change: give the reason in the commit)")

// Vectors loads the JSON vector file at path into v. With -update it first writes gen()'s
// value there (two-space indented JSON). The file, not the generator, is what the test
// then checks: vectors are published bytes, not a re-run of today's code.
func Vectors(t testing.TB, path string, v any, gen func() any) {
	t.Helper()
	if *Update {
		b, err := json.MarshalIndent(gen(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with go test -update)", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Unhex decodes a hex string from a vector file, failing the test on bad hex.
func Unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("vector: %v", err)
	}
	return b
}

// Golden compares v, encoded as indented JSON, byte for byte with the file at path, and
// returns the file's bytes. With -update it rewrites the file first (a format change: give
// the reason in the commit).
func Golden(t testing.TB, path string, v any) []byte {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *Update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodings differ from %s (byte for byte)", path)
	}
	return want
}
