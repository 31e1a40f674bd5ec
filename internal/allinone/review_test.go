package allinone

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/metal/access"
	mserver "github.com/veil-project/veil/internal/metal/server"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/testutil"
)

func freeConfig(t *testing.T) Config {
	a := func() string { return testutil.Addr(testutil.FreePort(t)) }
	return Config{KSAddr: a(), KSUDP: a(), StoreAddr: a(), PkbKAddr: a(), PkbVAddr: a()}
}

// The addresses are written into every credential an invitation carries ("https://" +
// address), so a listen address without a host clients can dial ("":PORT, 0.0.0.0, ::)
// made invitations no client could use: "veil://:7480" fails every TLS handshake (no
// server name), and 'veil serve --store-listen :7480 --user alice' failed at its first
// invitation (its own admin client dialled https://:7480) with the address then fixed for
// good. Init must refuse such an address before creating anything, naming the flag's
// address.
func TestInitRefusesWildcardAddresses(t *testing.T) {
	port := strconv.Itoa(testutil.FreePort(t))
	for _, bad := range []string{":" + port, "0.0.0.0:" + port, "[::]:" + port} {
		for _, field := range []string{"ks", "store"} {
			cfg := freeConfig(t)
			if field == "ks" {
				cfg.KSAddr = bad
			} else {
				cfg.StoreAddr = bad
			}
			dir := filepath.Join(t.TempDir(), "d")
			_, err := Init(dir, cfg)
			if err == nil || !strings.Contains(err.Error(), bad) {
				t.Errorf("%s address %q: Init returned %v, want a refusal naming it", field, bad, err)
			}
			if _, serr := os.Stat(dir); serr == nil {
				t.Errorf("%s address %q: Init left %s behind", field, bad, dir)
			}
		}
		p := access.Params{D: 3, Stash: 6, BlockSize: 64, FilesPerAccount: 2, Pack: 1, Base: 2}
		dir := filepath.Join(t.TempDir(), "d")
		if err := InitMetal(dir, bad, testutil.Addr(testutil.FreePort(t)), p, MetalExplicit{}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("metal address %q: InitMetal returned %v, want a refusal naming it", bad, err)
		}
	}
}

// A crash (SIGKILL, power loss) inside keyserver.Init or storeserver.Init leaves the part's
// directory without the file that marks it complete (keyserver: ks.json, written last;
// store: admin.cred, written last). Init skipped any part whose directory existed, wrote
// allinone.json, and the deployment was broken for good: users could not be added.
func TestInitRedoesPartLeftHalfMadeByACrash(t *testing.T) {
	for _, part := range []string{"keyserver", "store"} {
		t.Run(part, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			cfg := freeConfig(t)
			switch part { // what a crash just before the part's last write leaves
			case "keyserver":
				if err := keyserver.Init(ksDir(dir), keyserver.InitOptions{}); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(ksDir(dir), "ks.json"))
			case "store":
				if err := storeserver.Init(storeDir(dir)); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(storeDir(dir), storeserver.AdminCredentialFile))
			}
			if _, err := Init(dir, cfg); err != nil {
				t.Fatalf("init after a crashed one: %v", err)
			}
			if _, err := AddUser(dir, "alice"); err != nil {
				t.Fatalf("add user, stopped: %v", err)
			}
			d, err := Start(context.Background(), dir, Options{})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			defer d.Stop()
			if _, err := AddUser(dir, "bob"); err != nil {
				t.Fatalf("add user while running: %v", err)
			}
		})
	}
}

// InitMetal creates Server 2, then Server 1 (whose metal.json is its last file). A crash
// in between left a Metal directory that every later 'veil serve --metal' refused ("already
// holds a Metal server") or, once deployment.json existed, that every 'veil serve' failed
// to start. A first run that did not finish must be redone.
func TestInitMetalRedoesHalfMadeServers(t *testing.T) {
	p := access.Params{D: 3, Stash: 6, BlockSize: 64, FilesPerAccount: 2, Pack: 1, Base: 2}
	a1, a2 := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	for _, crash := range []string{"after server 2", "before server 1's metal.json"} {
		t.Run(crash, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			if _, err := Init(dir, freeConfig(t)); err != nil {
				t.Fatal(err)
			}
			if err := InitMetal(dir, a1, a2, p, MetalExplicit{}); err != nil {
				t.Fatal(err)
			}
			switch crash {
			case "after server 2":
				os.RemoveAll(metalDir(dir, 1))
			case "before server 1's metal.json":
				os.Remove(filepath.Join(metalDir(dir, 1), mserver.FileConfig))
			}
			if err := InitMetal(dir, a1, a2, p, MetalExplicit{}); err != nil {
				t.Fatalf("a --metal run after a crashed first one: %v", err)
			}
			d, err := Start(context.Background(), dir, Options{})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			d.Stop()
		})
	}
}

// allinone.json marks a complete deployment and every later command reads it; it was
// written in place (os.WriteFile: no temporary name, no fsync), so a crash or power loss
// right after the first run could leave it empty and the deployment unreadable for good
// ("allinone.json: unexpected end of JSON input"). It must appear under its name only
// complete: inotify must show no IN_CREATE or IN_MODIFY of it, only IN_MOVED_TO.
func TestInitWritesConfigAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	written := testutil.WatchWrites(t, dir)
	if _, err := Init(dir, freeConfig(t)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range written() {
		if strings.HasSuffix(ev, " "+configFile) {
			t.Fatalf("%s was written in place (%s): a crash can leave it torn", configFile, ev)
		}
	}
}
