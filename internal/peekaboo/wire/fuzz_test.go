package wire

import (
	"bytes"
	"crypto/hpke"
	"encoding/base64"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

func parserNames() []string {
	var names []string
	for n := range parsers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FuzzParse feeds every parser (selected by the first byte): it must return a value that
// re-encodes to the input, or ErrMalformed; never panic.
func FuzzParse(f *testing.F) {
	stubPublicKeyParser(f)
	fuzzParsers(f, parserNames(), append(samples(), pirSamples()...))
}

// fuzzParsers seeds f with the samples whose parser is among names (sorted) and checks
// every input: a value that re-encodes to it, or ErrMalformed.
func fuzzParsers(f *testing.F, names []string, seeds []encVec) {
	for _, e := range seeds {
		p := e.Name[:bytes.IndexByte([]byte(e.Name), ':')]
		if i := sort.SearchStrings(names, p); i < len(names) && names[i] == p {
			f.Add(append([]byte{byte(i)}, testutil.Unhex(f, e.Hex)...))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		name := names[int(b[0])%len(names)]
		in := b[1:]
		re, err := parsers[name](in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: error not ErrMalformed: %v", name, err)
			}
			return
		}
		// Padded formats accept trailing zeros the encoder re-creates; others re-encode exactly.
		if !bytes.Equal(re, in) {
			t.Fatalf("%s: accepted input does not re-encode to itself", name)
		}
	})
}

// FuzzOpen feeds the K-server's openers with attacker bytes.
func FuzzOpen(f *testing.F) {
	// Seeds come from the vector file: HPKE is randomised, and every fuzz worker process
	// must see the same valid query.
	k := mustKey(f)
	var v vectors
	testutil.Vectors(f, vectorFile, &v, nil)
	q := testutil.Unhex(f, v.Sealed[0].Sealed)
	f.Add(q)
	f.Add(testutil.Unhex(f, v.Sealed[2].Sealed))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := OpenQuery(k, b); err == nil && !bytes.Equal(b, q) {
			t.Fatal("altered query opened")
		}
		if c, err := ParseChunk(b); err == nil {
			if _, err := OpenChunk(k, c); err == nil && !bytes.Equal(b, MarshalChunk(c)) {
				t.Fatal("altered chunk opened")
			}
		}
	})
}

// FuzzCred feeds the credential parsers: ErrMalformed or a credential, never a panic.
func FuzzCred(f *testing.F) {
	k := mustKey(f)
	stubPublicKeyParser(f)
	pub := base64.StdEncoding.EncodeToString(k.Public().Marshal())
	f.Add([]byte(`{"veil_peekaboo_credential":1,"user":"bob","secret":"` + strings.Repeat("A", 43) + `","endpoint":"https://x:1","ca":"-----BEGIN CERTIFICATE-----","kserver_key":"` + pub + `"}`))
	f.Add([]byte(`{"veil_peekaboo_relay":1,"endpoint":"https://x:1","ca":"-----BEGIN CERTIFICATE-----","cert":"CERTIFICATE","key":"PRIVATE KEY","kserver_key":"` + pub + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, err := ParseUserCred(b); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("user credential: %v", err)
		}
		if _, _, err := ParseRelayCred(b); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("relay credential: %v", err)
		}
	})
}

// stubPublicKeyParser replaces the ML-KEM public key parser with one that accepts the
// fixed test key's bytes only: under the fuzzer's instrumentation the standard library's
// parser runs at about one call per second, which would leave our framing unfuzzed. The
// framing (version, KEM id, length) is still checked by our code before the stub.
func stubPublicKeyParser(f *testing.F) {
	k := mustKey(f)
	real := parsePub
	pub := k.Public().pub
	want := pub.Bytes()
	parsePub = func(b []byte) (hpke.PublicKey, error) {
		if !bytes.Equal(b, want) {
			return nil, errors.New("not the test key")
		}
		return pub, nil
	}
	f.Cleanup(func() { parsePub = real })
}
