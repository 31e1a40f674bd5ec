package storeserver

import (
	"strings"
	"testing"
)

// The names of blob objects (docs/formats/store-records.md, "Blob objects named by a
// generation"): by hash alone for key 0, with the generation in 16 hex digits otherwise;
// anything else in a blob directory is not a blob.
func TestBlobObjectNames(t *testing.T) {
	var h [32]byte
	for i := range h {
		h[i] = byte(i * 7)
	}
	hex := "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9"
	for _, c := range []struct {
		key  int64
		name string
	}{
		{0, hex},
		{0x123, hex + "-0000000000000123"},
		{1<<63 - 1, hex + "-7fffffffffffffff"},
	} {
		if got := blobObject(blobID{h, c.key}); got != c.name {
			t.Errorf("key %#x: name %s, want %s", c.key, got, c.name)
		}
		if b, ok := parseBlobObject(c.name); !ok || b != (blobID{h, c.key}) {
			t.Errorf("parse %s: %x %#x %v", c.name, b.h[:4], b.key, ok)
		}
	}
	for _, bad := range []string{
		hex + "-0000000000000000", // key 0 has no suffix
		hex + "-8000000000000000", // above 2^63-1
		hex + "-000000000000012",  // 15 digits
		hex + "-00000000000000123",
		hex + "-000000000000012A", // upper case
		hex + "_0000000000000123",
		strings.ToUpper(hex),
		hex[:63],
		hex + "-",
	} {
		if b, ok := parseBlobObject(bad); ok {
			t.Errorf("%q parsed as a blob: %#x", bad, b.key)
		}
	}
}

// FuzzBlobObjectName: a name listed in the blob store either is no blob or names exactly
// one, which names itself back.
func FuzzBlobObjectName(f *testing.F) {
	f.Add("00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9")
	f.Add("00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9-0000000000000123")
	f.Fuzz(func(t *testing.T, s string) {
		if b, ok := parseBlobObject(s); ok && blobObject(b) != s {
			t.Fatalf("%q parses to a blob named %q", s, blobObject(b))
		}
	})
}
