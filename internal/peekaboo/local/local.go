package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/server"
)

// Options configure both servers.
type Options struct {
	KAddr, VAddr string // listen addresses for a new deployment (default 127.0.0.1:0)
	K            kserver.Config
	V            vserver.Config
	PIR          pir.Params // private-query table of a new deployment (default pir.DefaultParams)
}

// Deployment is a running pair of servers.
type Deployment struct {
	KDir, VDir   string
	K            *kserver.Server
	V            *vserver.Server
	KAddr, VAddr string
	AdminCred    []byte
	cancel       context.CancelFunc
	errs         chan error
}

// Start initialises (if needed), opens and serves the K-server in dir/kserver and the
// V-server in dir/vserver.
func Start(dir string, o Options) (*Deployment, error) {
	d := &Deployment{KDir: filepath.Join(dir, "kserver"), VDir: filepath.Join(dir, "vserver")}
	kln, vln, err := d.listen(o)
	if err != nil {
		return nil, err
	}
	if d.K, err = kserver.Open(d.KDir, o.K); err != nil {
		kln.Close()
		vln.Close()
		return nil, err
	}
	if d.V, err = vserver.Open(d.VDir, o.V); err != nil {
		d.K.Close()
		kln.Close()
		vln.Close()
		return nil, err
	}
	if d.AdminCred, err = os.ReadFile(filepath.Join(d.VDir, vserver.FileAdminCred)); err != nil {
		return nil, errors.Join(err, d.closeAll())
	}
	d.KAddr, d.VAddr = kln.Addr().String(), vln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.errs = cancel, make(chan error, 2)
	go func() { d.errs <- d.K.Serve(ctx, server.Listeners{HTTP: kln}) }()
	go func() { d.errs <- d.V.Serve(ctx, server.Listeners{HTTP: vln}) }()
	return d, nil
}

// listen binds both ports, initialising the directories the first time.
func (d *Deployment) listen(o Options) (net.Listener, net.Listener, error) {
	kaddr, vaddr := o.KAddr, o.VAddr
	fresh := true
	if rc, err := os.ReadFile(filepath.Join(d.VDir, vserver.FileRelayCred)); err == nil {
		fresh = false
		c, _, err := wire.ParseRelayCred(rc)
		if err != nil {
			return nil, nil, err
		}
		ac, err := os.ReadFile(filepath.Join(d.VDir, vserver.FileAdminCred))
		if err != nil {
			return nil, nil, err
		}
		a, _, err := wire.ParseUserCred(ac)
		if err != nil {
			return nil, nil, err
		}
		kaddr, vaddr = hostPort(c.Endpoint), hostPort(a.Endpoint)
	}
	kln, err := net.Listen("tcp", orDefault(kaddr))
	if err != nil {
		return nil, nil, fmt.Errorf("k-server listen: %w", err)
	}
	vln, err := net.Listen("tcp", orDefault(vaddr))
	if err != nil {
		kln.Close()
		return nil, nil, fmt.Errorf("v-server listen: %w", err)
	}
	if fresh {
		err := kserver.Init(d.KDir, kserver.InitOptions{Endpoint: "https://" + kln.Addr().String(), PIR: o.PIR})
		var rc []byte
		if err == nil {
			rc, err = os.ReadFile(filepath.Join(d.KDir, kserver.FileRelayCred))
		}
		if err == nil {
			err = vserver.Init(d.VDir, vserver.InitOptions{RelayCred: rc, Endpoint: "https://" + vln.Addr().String()})
		}
		if err != nil {
			kln.Close()
			vln.Close()
			return nil, nil, err
		}
	}
	return kln, vln, nil
}

func orDefault(a string) string {
	if a == "" {
		return "127.0.0.1:0"
	}
	return a
}

func hostPort(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// Init creates the K-server in dir/kserver and the V-server in dir/vserver, to listen on
// kaddr and vaddr, unless they exist. Addresses with a host of 0.0.0.0 or :: are not
// endpoints: give the address clients dial.
func Init(dir, kaddr, vaddr string) error {
	d := &Deployment{KDir: filepath.Join(dir, "kserver"), VDir: filepath.Join(dir, "vserver")}
	if _, err := os.Stat(filepath.Join(d.VDir, vserver.FileDB)); err == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(d.KDir, kserver.FileKey)); err != nil {
		if err := kserver.Init(d.KDir, kserver.InitOptions{Endpoint: "https://" + kaddr, Hosts: hosts(kaddr)}); err != nil {
			return fmt.Errorf("peekaboo k-server: %w", err)
		}
	}
	rc, err := os.ReadFile(filepath.Join(d.KDir, kserver.FileRelayCred))
	if err != nil {
		return err
	}
	if err := vserver.Init(d.VDir, vserver.InitOptions{RelayCred: rc, Endpoint: "https://" + vaddr, Hosts: hosts(vaddr)}); err != nil {
		return fmt.Errorf("peekaboo v-server: %w", err)
	}
	return nil
}

func hosts(addr string) []string {
	h, _, _ := net.SplitHostPort(addr)
	return []string{h, "127.0.0.1", "::1", "localhost"}
}

// Open opens both servers of an initialised dir (for a caller that serves them itself,
// as `veil serve` does in its server.Group).
func Open(dir string, o Options) (*kserver.Server, *vserver.Server, error) {
	k, err := kserver.Open(filepath.Join(dir, "kserver"), o.K)
	if err != nil {
		return nil, nil, fmt.Errorf("peekaboo k-server: %w", err)
	}
	v, err := vserver.Open(filepath.Join(dir, "vserver"), o.V)
	if err != nil {
		k.Close()
		return nil, nil, fmt.Errorf("peekaboo v-server: %w", err)
	}
	return k, v, nil
}

// AddUser registers name and returns its credential, with an owner key added.
func (d *Deployment) AddUser(ctx context.Context, name string) ([]byte, error) {
	c, err := client.AddUser(ctx, d.AdminCred, name)
	if err != nil {
		return nil, err
	}
	return client.Join(c)
}

// Stop shuts both servers down gracefully and closes their state.
func (d *Deployment) Stop() error {
	d.cancel()
	err := errors.Join(<-d.errs, <-d.errs)
	return errors.Join(err, d.closeAll())
}

func (d *Deployment) closeAll() error {
	var errs []error
	if d.V != nil {
		errs = append(errs, d.V.Close())
	}
	if d.K != nil {
		errs = append(errs, d.K.Close())
	}
	return errors.Join(errs...)
}
