package allinone

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/invite"
	"github.com/veil-project/veil/internal/testutil"
)

func TestDeploymentLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if _, err := Init(dir, Config{KSAddr: "nonsense", KSUDP: "127.0.0.1:1", StoreAddr: "127.0.0.1:2"}); err == nil {
		t.Fatal("a bad address was accepted")
	}
	cfg := Config{KSAddr: testutil.Addr(testutil.FreePort(t)), KSUDP: testutil.Addr(testutil.FreePort(t)), StoreAddr: testutil.Addr(testutil.FreePort(t)),
		PkbKAddr: testutil.Addr(testutil.FreePort(t)), PkbVAddr: testutil.Addr(testutil.FreePort(t))}
	if _, err := Init(dir, cfg); err != nil {
		t.Fatalf("init after a failed attempt: %v", err)
	}
	if got, err := Init(dir, Config{}); err != nil || got != cfg {
		t.Fatalf("re-init: %+v %v", got, err)
	}
	if _, err := AddUser(dir, "offline"); err != nil {
		t.Fatalf("add user, stopped: %v", err)
	}
	d, err := Start(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{cfg.KSAddr, cfg.StoreAddr} { // bound when Start returns
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatalf("%s not listening after Start: %v", a, err)
		}
		c.Close()
	}
	b, err := AddUser(dir, "online")
	if err != nil {
		t.Fatalf("add user while running: %v", err)
	}
	if inv, err := invite.Parse(b); err != nil || inv.Store == nil || inv.Store.User != "online" || len(inv.KSCredential) == 0 {
		t.Fatalf("invitation: %+v %v", inv, err)
	}
	if _, err := AddUser(dir, "online"); err == nil {
		t.Fatal("a user was added twice")
	}
	if st, err := Stats(dir); err != nil || st.Users < 2 {
		t.Fatalf("stats while running: %+v %v", st, err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(); err != nil { // a second wait returns at once
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), filepath.Join(t.TempDir(), "none"), Options{}); err == nil {
		t.Fatal("started a deployment that does not exist")
	}
	if st, err := Stats(dir); err != nil || st.Users < 2 {
		t.Fatalf("stats when stopped: %+v %v", st, err)
	}
}
