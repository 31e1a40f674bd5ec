package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/bench/ks"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/testutil"
)

func veil(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// The keyserver command group end to end: init, client add/list/revoke, rotate, serve,
// a derivation with the issued credential, and bench ks against the running server.
func TestKeyserverCLI(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ks")
	cred := filepath.Join(t.TempDir(), "alice.json")
	hp, up := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	if _, err := veil(t, ctx, "keyserver", "init", "--dir", dir, "--url", "https://"+hp, "--udp", up); err != nil {
		t.Fatal(err)
	}
	if _, err := veil(t, ctx, "keyserver", "init", "--dir", dir); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("second init: %v", err)
	}
	if _, err := veil(t, ctx, "keyserver", "init", "--dir", t.TempDir(), "--suite", "dsa"); err == nil || !strings.Contains(err.Error(), "unknown suite") {
		t.Fatalf("bad suite: %v", err)
	}
	if _, err := veil(t, ctx, "keyserver", "client", "add", "alice", "--dir", dir, "--out", cred); err != nil {
		t.Fatal(err)
	}
	veil(t, ctx, "keyserver", "client", "add", "eve", "--dir", dir, "--out", filepath.Join(t.TempDir(), "eve.json"))
	if _, err := veil(t, ctx, "keyserver", "client", "revoke", "eve", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	out, err := veil(t, ctx, "keyserver", "client", "list", "--dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Name    string
		Revoked *time.Time
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 || list[0].Revoked != nil || list[1].Revoked == nil {
		t.Fatalf("list: %v %s", err, out)
	}
	if out, err := veil(t, ctx, "keyserver", "ratelimit-table"); err != nil || !strings.Contains(out, "2.73") {
		t.Fatalf("table: %v\n%s", err, out)
	}

	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := veil(t, sctx, "keyserver", "serve", "--dir", dir, "--https", hp, "--udp", up, "--ratelimit", "none", "--log-level", "warn")
		done <- err
	}()
	testutil.WaitTCP(t, hp, 10*time.Second)
	c, err := ksclient.LoadCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{"https", "udp"} {
		cl, err := ksclient.New(c, ksclient.Options{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		if ks, err := cl.DeriveKeys(ctx, []mle.Digest{{1}, {2}}); err != nil || ks[0] == ks[1] {
			t.Fatalf("%s derive: %v", tr, err)
		}
		cl.Close()
	}
	out, err = veil(t, ctx, "bench", "ks", "--cred", cred, "--duration", "500ms", "--batch", "4", "--verify", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r ksbench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Evaluations == 0 || r.Errors != 0 {
		t.Fatalf("bench: %v %s", err, out)
	}
	out, err = veil(t, ctx, "bench", "ks", "--cred", cred, "--transport", "udp", "--rate", "200", "--duration", "500ms", "--timeout", "200ms")
	if err != nil || !strings.Contains(out, "udp evaluate") {
		t.Fatalf("udp bench: %v %s", err, out)
	}
	if out, err := veil(t, ctx, "keyserver", "rotate", "--dir", dir); err != nil || !strings.Contains(out, "new current key") {
		t.Fatalf("rotate: %v %s", err, out)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
}
