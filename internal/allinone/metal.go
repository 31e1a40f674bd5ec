package allinone

import (
	"errors"
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

// InitMetal creates both Metal servers under dir/metal unless they exist (then it does
// nothing: addresses and parameters are fixed at the first run).
func InitMetal(dir, addr1, addr2 string, p access.Params) error {
	if _, err := os.Stat(MetalDeploymentFile(dir)); err == nil {
		return nil
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

// addMetal opens both Metal servers, if the deployment has them, and adds them to g.
func addMetal(g *server.Group, dir string, log *slog.Logger) error {
	if _, err := os.Stat(MetalDeploymentFile(dir)); err != nil {
		return nil
	}
	for role := 2; role >= 1; role-- {
		d := metalDir(dir, role)
		addr, err := mserver.ListenAddr(d)
		if err != nil {
			return err
		}
		s, err := mserver.Open(d, mserver.Config{Logger: log})
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
