package open

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/testutil"
)

func roundTrip(t *testing.T, b storage.Backend) {
	t.Helper()
	if err := b.Put(t.Context(), "d", "f", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Get(t.Context(), "d", "f")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != "hello" {
		t.Fatalf("got %q", got)
	}
}

// TestOpenS3 opens a real S3 server by location string, keys from the environment.
func TestOpenS3(t *testing.T) {
	srv := testutil.StartS3(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	b, err := Open(t.Context(), "s3://"+srv.Endpoint+"/veil-test/some/prefix?tls=0&create=1", EnvCredentials(Credentials{}, os.Getenv))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, b)
	if _, err := os.Stat(filepath.Join(srv.Root, "veil-test", "some", "prefix", "d", "f")); err != nil {
		t.Fatalf("object not under the prefix: %v", err)
	}
}

// TestOpenVeil opens a real store over HTTPS from a credential file.
func TestOpenVeil(t *testing.T) {
	dir := t.TempDir()
	if err := storeserver.Init(dir); err != nil {
		t.Fatal(err)
	}
	cred, err := storeserver.AddUser(dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	credFile := filepath.Join(dir, "alice.cred")
	os.WriteFile(credFile, cred.Marshal(), 0o600)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- storeserver.Run(ctx, dir, ln.Addr().String(), storeserver.Config{}, func(string) { close(ready) })
	}()
	select {
	case <-ready:
		defer func() { cancel(); <-done }()
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	t.Setenv("VEIL_STORE_CREDENTIAL", credFile)
	b, err := Open(t.Context(), "veil://"+ln.Addr().String(), EnvCredentials(Credentials{}, os.Getenv))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, b)
}
