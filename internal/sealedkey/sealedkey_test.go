package sealedkey

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var (
	cheap   = KDF{Time: 1, MemoryKiB: 64, Threads: 1}
	formats = map[string]*Format{
		"nonce in AD": {Name: "a key", Magic: "AAAA", Version: 1, SecretLen: 32, NonceInAD: true, MaxTime: 10, MaxMemoryKiB: 1 << 10},
		"extra":       {Name: "b key", Magic: "BB", Version: 3, SecretLen: 16, ExtraLen: 5, MaxTime: 10, MaxMemoryKiB: 1 << 10},
	}
)

func seal(t testing.TB, f *Format) ([]byte, []byte) {
	h := &Header{KDF: cheap, Extra: bytes.Repeat([]byte{7}, f.ExtraLen)}
	h.Salt[0] = 9
	secret := bytes.Repeat([]byte{0x5a}, f.SecretLen)
	b, err := f.Seal(h, []byte("pw"), secret, make([]byte, 24))
	if err != nil {
		t.Fatal(err)
	}
	return b, secret
}

func TestRoundTripAndEveryByteAuthenticated(t *testing.T) {
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			b, secret := seal(t, f)
			if len(b) != f.Size() {
				t.Fatalf("size %d, want %d", len(b), f.Size())
			}
			h, got, err := f.Open(b, []byte("pw"))
			if err != nil || !bytes.Equal(got, secret) || h.KDF != cheap || h.Salt[0] != 9 || !bytes.Equal(h.Extra, bytes.Repeat([]byte{7}, f.ExtraLen)) {
				t.Fatalf("open: %+v %v", h, err)
			}
			if _, _, err := f.Open(b, []byte("px")); !errors.Is(err, ErrWrongPassphrase) {
				t.Fatalf("wrong passphrase: %v", err)
			}
			for i := range b { // every byte: refused, as a format error or by authentication
				c := bytes.Clone(b)
				c[i] ^= 1
				if _, _, err := f.Open(c, []byte("pw")); err == nil {
					t.Fatalf("byte %d altered, still opened", i)
				}
			}
		})
	}
}

func TestParseRefusals(t *testing.T) {
	f := formats["extra"]
	b, _ := seal(t, f)
	cases := map[string]struct {
		b    []byte
		text string
	}{
		"short":      {b[:len(b)-1], "is 88 bytes, want 89"},
		"magic":      {append([]byte("XX"), b[2:]...), "bad magic"},
		"version":    {append(append([]byte("BB"), 4), b[3:]...), "version 4, want 3"},
		"kdf memory": {append(append(bytes.Clone(b[:7]), 0xff), b[8:]...), "out-of-range argon2id"},
	}
	for name, c := range cases {
		_, err := f.Parse(c.b)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want ErrFormat naming %q", name, err, c.text)
		}
	}
}

func TestSealRefusals(t *testing.T) {
	f := formats["extra"]
	good := func() (*Header, []byte, []byte, []byte) {
		return &Header{KDF: cheap, Extra: make([]byte, 5)}, []byte("pw"), make([]byte, 16), make([]byte, 24)
	}
	h, p, s, n := good()
	if _, err := f.Seal(h, p, s[:15], n); err == nil {
		t.Error("short secret sealed")
	}
	if _, err := f.Seal(h, nil, s, n); err == nil {
		t.Error("empty passphrase sealed")
	}
	if _, err := f.Seal(h, p, s, n[:12]); err == nil {
		t.Error("short nonce sealed")
	}
	h.Extra = nil
	if _, err := f.Seal(h, p, s, n); err == nil {
		t.Error("missing extra fields sealed")
	}
	h, p, s, n = good()
	h.KDF.Threads = 0
	if _, err := f.Seal(h, p, s, n); err == nil {
		t.Error("a KDF that Parse would refuse was sealed")
	}
}

func FuzzOpen(f *testing.F) {
	for _, fm := range formats {
		b, _ := seal(f, fm)
		f.Add(b)
	}
	f.Add([]byte("AAAA"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fm := range formats {
			if _, _, err := fm.Open(b, []byte("pw")); err == nil {
				if len(b) != fm.Size() {
					t.Fatal("opened a file of the wrong size")
				}
			}
		}
	})
}
