package keyserver

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/server"
)

func TestDirLifecycle(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(context.Background(), dir, Config{}); !errors.Is(err, ErrNotInit) {
		t.Fatalf("open before init: %v", err)
	}
	if err := Init(dir, InitOptions{Suite: "dsa"}); err == nil {
		t.Fatal("unknown suite accepted")
	}
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Init(dir, InitOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second init: %v", err)
	}
	for _, f := range []string{fileCAKey, fileSrvKey} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, err, fi.Mode())
		}
	}
	b, err := AddClient(dir, "alice", AddOptions{URL: "https://ks.example:1"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kswire.ParseCredential(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.URL != "https://ks.example:1" || p.UDP != defaultUDP || p.Name != "alice" || len(p.Keys) != 1 {
		t.Fatalf("credential: %+v", p.Credential)
	}
	if err := AddClientFile(dir, "dev", os.DevNull, AddOptions{}); err == nil {
		t.Fatal("credential written over /dev/null")
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null damaged: %v", err)
	}
	if _, err := AddClient(dir, "alice", AddOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate name: %v", err)
	}
	for _, bad := range []string{"", "a b", "../x", "-x"} {
		if _, err := AddClient(dir, bad, AddOptions{}); err == nil {
			t.Fatalf("name %q accepted", bad)
		}
	}
	if err := RevokeClient(dir, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	if err := RevokeClient(dir, "alice"); err != nil {
		t.Fatal(err)
	}
	cs, _ := ListClients(dir)
	if len(cs) != 1 || cs[0].Revoked == nil {
		t.Fatalf("list: %+v", cs)
	}
	id, err := Rotate(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = AddClient(dir, "bob", AddOptions{})
	p, _ = kswire.ParseCredential(b)
	if len(p.Keys) != 2 || p.CurrentKey != id {
		t.Fatalf("after rotate: %d keys, current %s, want %s", len(p.Keys), p.CurrentKey, id)
	}
	// A second server on the same directory cannot take the rate-limit file.
	serve(t, dir)
	if _, err := Open(context.Background(), dir, Config{}); err == nil {
		t.Fatal("second server opened the same rate-limit file")
	}
}

// A client added within the same clock tick as the previous change (same mtime) is still
// picked up by the reload loop: every atomic rewrite of clients.json is a new inode.
func TestReloadSeesChangesWithinOneTick(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir)
	path := filepath.Join(dir, fileClients)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddClient(dir, "alice", AddOptions{URL: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, before.ModTime(), before.ModTime()); err != nil { // as if in the same tick
		t.Fatal(err)
	}
	if err := s.reload(false); err != nil {
		t.Fatal(err)
	}
	if !s.state.Load().active["alice"] {
		t.Fatal("a client added within the same mtime tick was not loaded")
	}
}

// serve opens and runs a key server on dir (HTTPS only) until the test ends.
func serve(t *testing.T, dir string) *Server {
	t.Helper()
	s, _ := serveOn(t, dir, Config{}, "-")
	return s
}

// serveOn opens a key server on dir with cfg and runs it on loopback HTTPS and UDP
// (udpAddr "-": none) until the test ends.
func serveOn(t *testing.T, dir string, cfg Config, udpAddr string) (*Server, server.Listeners) {
	t.Helper()
	s, err := Open(context.Background(), dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := Listen(Config{HTTPSAddr: "127.0.0.1:0", UDPAddr: udpAddr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ls) }()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	return s, ls
}

// A client added while the server runs is accepted on its very first request, even before
// the reload loop's next tick (veil serve registers its users after the servers listen;
// a first put then raced the tick and was refused as "revoked or unknown").
func TestNewClientAcceptedBeforeReloadTick(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	_, ls := serveOn(t, dir, Config{ReloadInterval: time.Hour}, "-")
	b, err := AddClient(dir, "late", AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	late, err := kswire.ParseCredential(b)
	if err != nil {
		t.Fatal(err)
	}
	_, req := blindRequest(t, late, late.Current.ID(), []byte("first"))
	if code, body, _ := post(t, httpsClient(late, true), "https://"+ls.Addr()+"/v1/evaluate", req); code != http.StatusOK {
		t.Fatalf("first request of a client added after start: %d %s", code, body)
	}
}
