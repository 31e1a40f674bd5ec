package allinone

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/metal/access"
	mserver "github.com/veil-project/veil/internal/metal/server"
	"github.com/veil-project/veil/internal/server"
)

// Default Metal addresses of an all-in-one deployment.
const (
	DefaultMetal1Addr = "127.0.0.1:7601"
	DefaultMetal2Addr = "127.0.0.1:7602"
)

func metalDir(dir string, role int) string {
	return filepath.Join(dir, "metal", string(rune('0'+role)))
}

// MetalDeploymentFile is the file users join ('veil metal join FILE').
func MetalDeploymentFile(dir string) string {
	return filepath.Join(metalDir(dir, 1), mserver.FileDeployment)
}

// MetalExplicit holds the Metal settings a user gave explicitly (zero fields: not given).
type MetalExplicit struct {
	Addr1, Addr2 string
	D, BlockSize int
}

// InitMetal creates both Metal servers under dir/metal unless they exist. Addresses and
// parameters are fixed at the first run: for existing servers an explicit setting that
// differs from theirs is refused instead of silently ignored.
func InitMetal(dir, addr1, addr2 string, p access.Params, explicit MetalExplicit) error {
	if metalComplete(dir) {
		return metalDiffers(dir, explicit)
	}
	for _, a := range []struct{ what, addr string }{{"metal server 1", addr1}, {"metal server 2", addr2}} {
		if _, err := clientHost(a.what, a.addr); err != nil {
			return err
		}
	}
	// A first --metal run that crashed left part of it (found by review: every later run
	// was refused, or failed to start): nobody joined servers that never ran, start over.
	if err := os.RemoveAll(filepath.Join(dir, "metal")); err != nil {
		return err
	}
	if err := mserver.Init(metalDir(dir, 2), mserver.InitOptions{Role: 2, Endpoint: "https://" + addr2, Params: p}); err != nil {
		return err
	}
	cred, err := os.ReadFile(filepath.Join(metalDir(dir, 2), mserver.FilePeerCred))
	if err != nil {
		return err
	}
	return mserver.Init(metalDir(dir, 1), mserver.InitOptions{Role: 1, Endpoint: "https://" + addr1, PeerCred: cred})
}

// addMetal opens both Metal servers, if the deployment has them, and adds them to g, with
// cfg (its zero fields the defaults) and log.
func addMetal(g *server.Group, dir string, cfg mserver.Config, log *slog.Logger) error {
	if !metalComplete(dir) {
		return nil
	}
	for role := 2; role >= 1; role-- {
		d := metalDir(dir, role)
		addr, err := mserver.ListenAddr(d)
		if err != nil {
			return err
		}
		cfg.Logger = log
		s, err := mserver.Open(d, cfg)
		if err != nil {
			return err
		}
		ls, err := server.Listen(addr, "")
		if err != nil {
			return errors.Join(err, s.Close())
		}
		g.Add("metal server "+string(rune('0'+role)), s, ls)
	}
	return nil
}

// metalComplete reports whether both Metal servers were made: Server 1's configuration is
// the last file InitMetal writes (after deployment.json).
func metalComplete(dir string) bool {
	_, err := os.Stat(filepath.Join(metalDir(dir, 1), mserver.FileConfig))
	return err == nil
}

// metalDiffers refuses explicit Metal settings that are not the existing servers'.
func metalDiffers(dir string, explicit MetalExplicit) error {
	a1, err := mserver.ListenAddr(metalDir(dir, 1))
	if err != nil {
		return err
	}
	a2, err := mserver.ListenAddr(metalDir(dir, 2))
	if err != nil {
		return err
	}
	p, err := mserver.DeploymentParams(metalDir(dir, 2))
	if err != nil {
		return err
	}
	for _, f := range []struct{ flag, was, want string }{
		{"--metal-listen1", a1, explicit.Addr1}, {"--metal-listen2", a2, explicit.Addr2},
		{"--metal-files-log2", fmt.Sprint(p.D), nonZero(explicit.D)},
		{"--metal-block-size", fmt.Sprint(p.BlockSize), nonZero(explicit.BlockSize)},
	} {
		if f.want != "" && f.want != f.was {
			return fmt.Errorf("%s's Metal servers were set up with %s %s at their first run; "+
				"drop %s, or serve a new deployment with another --dir", dir, f.flag, f.was, f.flag)
		}
	}
	return nil
}

func nonZero(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}
