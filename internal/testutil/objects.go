package testutil

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// GetObject reads dir/name from be whole, failing the test on any error. Tests use it to
// play a storage service that reads (and then alters) what a client stored.
func GetObject(t testing.TB, be storage.Backend, dir, name string) []byte {
	t.Helper()
	rc, err := be.Get(context.Background(), dir, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// PutObject stores b as dir/name in be, failing the test on any error.
func PutObject(t testing.TB, be storage.Backend, dir, name string, b []byte) {
	t.Helper()
	if err := be.Put(context.Background(), dir, name, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}
