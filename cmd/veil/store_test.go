package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/testutil"
)

// storeRun runs veil with args in-process and returns its output.
func storeRun(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

func TestStoreCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := storeRun(t, ctx, args...)
		if err != nil {
			t.Fatalf("veil %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	mustRun("store", "init", "--dir", dir)
	credFile := filepath.Join(dir, "alice.cred")
	mustRun("store", "user", "add", "alice", "--dir", dir, "--out", credFile, "--quota", "10MiB")
	if out := mustRun("store", "user", "add", "bob", "--dir", dir); !strings.Contains(out, `"veil_store_credential": 1`) {
		t.Fatalf("user add printed %q", out)
	}
	if out := mustRun("store", "user", "list", "--dir", dir); !strings.Contains(out, "alice") || !strings.Contains(out, "10 MiB") {
		t.Fatalf("user list: %q", out)
	}
	if _, err := storeRun(t, ctx, "store", "user", "add", "alice", "--dir", dir); err == nil {
		t.Fatal("adding alice twice succeeded")
	}
	if _, err := storeRun(t, ctx, "store", "user", "add", "carol", "--dir", dir, "--quota", "lots"); err == nil || !strings.Contains(err.Error(), "--quota") {
		t.Fatalf("bad quota: %v", err)
	}
	mustRun("store", "user", "quota", "bob", "2MiB", "--dir", dir)
	if out := mustRun("store", "user", "list", "--dir", dir); !strings.Contains(out, "bob                  false           0 B      2.0 MiB") {
		t.Fatalf("user list after quota: %q", out)
	}
	if _, err := storeRun(t, ctx, "store", "user", "quota", "bob", "lots", "--dir", dir); err == nil || !strings.Contains(err.Error(), `quota: "lots" is not a size`) {
		t.Fatalf("bad quota size: %v", err)
	}
	if _, err := storeRun(t, ctx, "store", "user", "quota", "nobody", "1MiB", "--dir", dir); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("quota of an unknown user: %v", err)
	}
	if _, err := storeRun(t, ctx, "store", "serve", "--dir", dir, "--listen", "0.0.0.0:0", "--insecure-http"); err == nil {
		t.Fatal("--insecure-http on a public address was accepted")
	}

	// serve, store through the API, stop by cancelling (what SIGTERM does).
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := storeRun(t, sctx, "store", "serve", "--dir", dir, "--listen", addr, "--log-level", "warn")
		done <- err
	}()
	cred, err := storewire.LoadCredential(credFile)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := remote.New("https://"+addr, cred)
	testutil.WaitTCP(t, addr, 10*time.Second)
	if err := rb.Put(ctx, "", "f", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	rc, err := rb.Get(ctx, "", "f")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	rb.Close()
	if string(got) != "hello" {
		t.Fatalf("got %q", got)
	}
	if out := mustRun("store", "stats", "--url", "https://"+addr, "--credential", filepath.Join(dir, "admin.cred"), "--json"); !strings.Contains(out, `"logical_bytes":5`) {
		t.Fatalf("stats from the running server: %q", out)
	}
	if _, err := storeRun(t, ctx, "store", "stats", "--url", "https://"+addr, "--credential", credFile); err == nil {
		t.Fatal("a user's credential read /v1/stats")
	}
	// Users and gc on the running server, with the admin credential.
	online := []string{"--url", "https://" + addr, "--credential", filepath.Join(dir, "admin.cred")}
	carolFile := filepath.Join(dir, "carol.cred")
	mustRun(append([]string{"store", "user", "add", "carol", "--out", carolFile}, online...)...)
	carol, err := storewire.LoadCredential(carolFile)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := remote.New("https://"+addr, carol)
	if err := cb.Put(ctx, "", "c", strings.NewReader("carol's"), 7); err != nil {
		t.Fatalf("new user's put: %v", err)
	}
	mustRun(append([]string{"store", "user", "quota", "carol", "8B"}, online...)...)
	if err := cb.Put(ctx, "", "d", strings.NewReader("more"), 4); !errors.Is(err, storage.ErrQuota) {
		t.Fatalf("a put past the quota set online: %v", err)
	}
	mustRun(append([]string{"store", "user", "quota", "carol", "none"}, online...)...)
	if err := cb.Put(ctx, "", "d", strings.NewReader("carol's"), 7); err != nil {
		t.Fatalf("a put once the quota is removed online: %v", err)
	}
	cb.Close()
	if out := mustRun(append([]string{"store", "user", "list"}, online...)...); !strings.Contains(out, "carol") {
		t.Fatalf("online user list: %q", out)
	}
	mustRun(append([]string{"store", "user", "remove", "carol"}, online...)...)
	if out := mustRun(append([]string{"store", "gc"}, online...)...); !strings.Contains(out, "removed 1 unreferenced") {
		t.Fatalf("online gc: %q", out)
	}
	if _, err := storeRun(t, ctx, append([]string{"store", "user", "add", "Bad Name"}, online...)...); err == nil || !strings.Contains(err.Error(), "invalid name") {
		t.Fatalf("bad user name online: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}

	if out := mustRun("store", "stats", "--dir", dir); !strings.Contains(out, "objects         1") {
		t.Fatalf("stats: %q", out)
	}
	mustRun("store", "user", "remove", "alice", "--dir", dir)
	if out := mustRun("store", "gc", "--dir", dir); !strings.Contains(out, "removed 1 unreferenced") {
		t.Fatalf("gc: %q", out)
	}
	if out := mustRun("store", "fsck", "--dir", dir); !strings.HasPrefix(out, "clean") {
		t.Fatalf("fsck: %q", out)
	}
}

func TestStoreParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "123": 123, "5MiB": 5 << 20, "2GiB": 2 << 30, "1KB": 1000, "7 B": 7} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"", "x", "-1", "1.5GiB", "5 MiBs"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// Flag defaults written from the library's byte counts read back as the same count.
func TestExactBytesRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 7, 1000, 1024, 1536, 64 << 20, 5 << 30, 3 << 40} {
		s := exactBytes(n)
		if got, err := parseBytes(s); err != nil || got != n {
			t.Errorf("%d -> %q -> %d, %v", n, s, got, err)
		}
	}
}
