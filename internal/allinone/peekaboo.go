package allinone

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/local"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/server"
)

// Default Peekaboo addresses (a deployment made before Peekaboo existed gets these).
const (
	DefaultPkbKAddr = kserver.DefaultListen
	DefaultPkbVAddr = vserver.DefaultListen
)

func pkbDir(dir string) string { return filepath.Join(dir, "peekaboo") }

func pkbAddrs(cfg Config) (string, string) {
	k, v := cfg.PkbKAddr, cfg.PkbVAddr
	if k == "" {
		k = DefaultPkbKAddr
	}
	if v == "" {
		v = DefaultPkbVAddr
	}
	return k, v
}

// addPeekaboo initialises (if needed) and opens Peekaboo's K-server and V-server and adds
// them to g on their own listeners.
func addPeekaboo(g *server.Group, dir string, cfg Config, log *slog.Logger) error {
	kaddr, vaddr := pkbAddrs(cfg)
	if err := local.Init(pkbDir(dir), kaddr, vaddr); err != nil {
		return err
	}
	k, v, err := local.Open(pkbDir(dir), local.Options{K: kserver.Config{Logger: log}, V: vserver.Config{Logger: log}})
	if err != nil {
		return err
	}
	kl, err := server.Listen(kaddr, "")
	if err != nil {
		return errors.Join(err, v.Close(), k.Close())
	}
	g.Add("peekaboo k-server", k, kl)
	vl, err := server.Listen(vaddr, "")
	if err != nil {
		return errors.Join(err, v.Close())
	}
	g.Add("peekaboo v-server", v, vl)
	return nil
}

// AddPeekabooUser registers name with the Peekaboo V-server (offline, or through the
// running server's admin API) and returns the user's credential.
func AddPeekabooUser(ctx context.Context, dir, name string) ([]byte, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	kaddr, vaddr := pkbAddrs(cfg)
	if err := local.Init(pkbDir(dir), kaddr, vaddr); err != nil {
		return nil, err
	}
	vdir := filepath.Join(pkbDir(dir), "vserver")
	cred, err := vserver.AddUser(vdir, name)
	if errors.Is(err, vserver.ErrBusy) {
		admin, aerr := os.ReadFile(filepath.Join(vdir, vserver.FileAdminCred))
		if aerr != nil {
			return nil, aerr
		}
		return client.AddUser(ctx, admin, name)
	}
	return cred, err
}

// PeekabooVAddr is the address of the deployment's Peekaboo V-server.
func PeekabooVAddr(cfg Config) string { _, v := pkbAddrs(cfg); return v }
