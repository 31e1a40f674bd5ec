package allinone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/invite"
	"github.com/veil-project/veil/internal/keyserver"
	mserver "github.com/veil-project/veil/internal/metal/server"
	"github.com/veil-project/veil/internal/server"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storewire"
)

// Config is the deployment's addresses, fixed at Init (credentials carry them).
type Config struct {
	KSAddr    string `json:"ks_https"`             // key server HTTPS
	KSUDP     string `json:"ks_udp"`               // key server UDP sessions
	StoreAddr string `json:"store_tls"`            // storage service
	PkbKAddr  string `json:"peekaboo_k,omitempty"` // Peekaboo K-server (default DefaultPkbKAddr)
	PkbVAddr  string `json:"peekaboo_v,omitempty"` // Peekaboo V-server (default DefaultPkbVAddr)
}

// DefaultConfig listens on loopback only.
var DefaultConfig = Config{KSAddr: keyserver.DefaultConfig().HTTPSAddr, KSUDP: keyserver.DefaultConfig().UDPAddr,
	StoreAddr: storeserver.DefaultAddr, PkbKAddr: DefaultPkbKAddr, PkbVAddr: DefaultPkbVAddr}

const configFile = "allinone.json"

func ksDir(dir string) string    { return filepath.Join(dir, "keyserver") }
func storeDir(dir string) string { return filepath.Join(dir, "store") }

// Init creates the deployment in dir unless it exists; it returns the configuration in
// force (the stored one when dir was already initialised).
func Init(dir string, cfg Config) (Config, error) {
	if b, err := os.ReadFile(filepath.Join(dir, configFile)); err == nil {
		var old Config
		if err := json.Unmarshal(b, &old); err != nil {
			return old, fmt.Errorf("%s: %w", configFile, err)
		}
		return old, nil
	}
	if cfg == (Config{}) {
		cfg = DefaultConfig
	}
	// Check every address before creating anything, so a typo leaves nothing half made.
	host, err := clientHost("key server", cfg.KSAddr)
	if err != nil {
		return cfg, err
	}
	if _, err := clientHost("key server UDP", cfg.KSUDP); err != nil {
		return cfg, err
	}
	shost, err := clientHost("store", cfg.StoreAddr)
	if err != nil {
		return cfg, err
	}
	for _, a := range []struct{ what, addr string }{{"peekaboo K-server", cfg.PkbKAddr}, {"peekaboo V-server", cfg.PkbVAddr}} {
		if a.addr != "" {
			if _, err := clientHost(a.what, a.addr); err != nil {
				return cfg, err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return cfg, err
	}
	// A run that failed (or crashed) half way left one part: create only what is missing.
	// A part is complete once the file its init writes last exists (the key server's
	// ks.json, the store's admin.cred); one without it is what a crash left, and is made
	// again (no user was added: that needs allinone.json, written below).
	if _, err := keyserver.ListClients(ksDir(dir)); errors.Is(err, keyserver.ErrNotInit) {
		os.RemoveAll(ksDir(dir))
		if err := keyserver.Init(ksDir(dir), keyserver.InitOptions{Hosts: []string{host, "127.0.0.1", "::1", "localhost"},
			URL: "https://" + cfg.KSAddr, UDP: cfg.KSUDP}); err != nil {
			os.RemoveAll(ksDir(dir))
			return cfg, fmt.Errorf("key server: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(storeDir(dir), storeserver.AdminCredentialFile)); err != nil {
		os.RemoveAll(storeDir(dir))
		if err := storeserver.Init(storeDir(dir), shost); err != nil {
			os.RemoveAll(storeDir(dir))
			return cfg, fmt.Errorf("store: %w", err)
		}
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	// Atomically and durably: it marks the deployment complete and every command reads it.
	return cfg, atomicfile.Write(filepath.Join(dir, configFile), b, 0o600, true)
}

// clientHost is addr's host, refusing one clients cannot dial: the address is written into
// the credentials every invitation carries ("https://" + addr), and a wildcard there
// (":7480", "0.0.0.0:7480", "[::]:7480") names no server (found by review: such
// invitations failed every TLS handshake, and 'veil serve --user' failed adding users).
func clientHost(what, addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s address %q: %w", what, addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "", fmt.Errorf("%s address %q: give the host name or IP address clients reach it at, not a wildcard "+
			"(the address is written into every invitation)", what, addr)
	}
	return host, nil
}

// LoadConfig reads the configuration of an initialised deployment.
func LoadConfig(dir string) (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(dir, configFile))
	if errors.Is(err, os.ErrNotExist) {
		return c, fmt.Errorf("%s is not a veil deployment (run 'veil serve --dir %s' once)", dir, dir)
	}
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(b, &c)
}

// AddUser registers name with the key server and the storage service and returns the
// user's invitation file. The store must not be running in another process (its database
// is locked); a running store takes new users through its admin API (POST /v1/users,
// docs/formats/store-api.md).
func AddUser(dir, name string) ([]byte, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	// The store first: it is the part that refuses while a server runs (its database is
	// locked), and a store user can be removed again if the key server then fails.
	// The store first, then the key server (which picks up new clients while running); if
	// the key server refuses, the store user is removed again. A running deployment holds
	// the store's database, so the user is then added through the store's admin API.
	remove := func() {
		storeserver.With(storeDir(dir), func(s *storeserver.Service) error { return s.RemoveUser(name) })
	}
	sc, err := storeserver.AddUser(storeDir(dir), name)
	if errors.Is(err, storeserver.ErrBusy) {
		admin, aerr := adminClient(dir, cfg)
		if aerr != nil {
			return nil, aerr
		}
		defer admin.Close()
		sc, err = admin.AddUser(context.Background(), name, 0)
		remove = func() { admin.RemoveUser(context.Background(), name) }
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	ksCred, err := keyserver.AddClient(ksDir(dir), name, keyserver.AddOptions{})
	if err != nil {
		remove()
		return nil, fmt.Errorf("key server: %w", err)
	}
	sc.Endpoint = "https://" + cfg.StoreAddr
	inv := &invite.Invite{User: name, Storage: "veil://" + cfg.StoreAddr, Store: &sc, KSCredential: ksCred}
	return inv.Marshal()
}

// adminClient talks to the running store as its administrator.
func adminClient(dir string, cfg Config) (*remote.Admin, error) {
	cred, err := storewire.LoadCredential(filepath.Join(storeDir(dir), "admin.cred"))
	if err != nil {
		return nil, err
	}
	return remote.NewAdmin("https://"+cfg.StoreAddr, cred)
}

// Stats reports the storage service's dedup figures, from the running deployment (admin
// API) or, when it is stopped, from its database.
func Stats(dir string) (storeserver.Stats, error) {
	s, err := storeserver.Open(storeDir(dir), storeserver.Config{})
	if errors.Is(err, storeserver.ErrBusy) {
		cfg, err := LoadConfig(dir)
		if err != nil {
			return storeserver.Stats{}, err
		}
		admin, err := adminClient(dir, cfg)
		if err != nil {
			return storeserver.Stats{}, err
		}
		defer admin.Close()
		return admin.Stats(context.Background())
	}
	if err != nil {
		return storeserver.Stats{}, err
	}
	defer s.Close()
	return s.Stats()
}

// Deployment is a running key server and storage service.
type Deployment struct {
	Config Config
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Options are a run's settings (not fixed at the first run, unlike Config).
type Options struct {
	Logger *slog.Logger // nil: discard
	// Metal: Metal's servers, if the deployment has them; zero fields take their defaults.
	// 'veil serve' sets SilenceTimeout (--metal-silence-timeout); Logger is the one above.
	Metal mserver.Config
}

// Start opens both services and binds their listeners, so clients can connect as soon as
// it returns; they serve until ctx is cancelled or Stop is called.
func Start(ctx context.Context, dir string, o Options) (*Deployment, error) {
	log := o.Logger
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	var g server.Group
	fail := func(what string, err error) (*Deployment, error) {
		g.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	ks, err := keyserver.Open(ctx, ksDir(dir), keyserver.Config{Logger: log})
	if err != nil {
		return fail("key server", err)
	}
	ksl, err := server.Listen(cfg.KSAddr, cfg.KSUDP)
	if err != nil {
		ks.Close()
		return fail("key server", err)
	}
	g.Add("key server", ks, ksl)
	st, err := storeserver.Open(storeDir(dir), storeserver.Config{Logger: log})
	if err != nil {
		return fail("store", err)
	}
	stl, err := server.Listen(cfg.StoreAddr, "")
	if err != nil {
		st.Close()
		return fail("store", err)
	}
	g.Add("store", st, stl)
	if err := addPeekaboo(&g, dir, cfg, log); err != nil {
		return fail("peekaboo", err)
	}
	if err := addMetal(&g, dir, o.Metal, log); err != nil {
		return fail("metal", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	d := &Deployment{Config: cfg, cancel: cancel, done: make(chan struct{})}
	go func() { // one failing stops the other; both are closed once both have stopped
		d.err = errors.Join(g.Serve(ctx), g.Close())
		cancel()
		close(d.done)
	}()
	return d, nil
}

// Wait blocks until both services have stopped (one failing stops the other) and
// returns the first error. It may be called any number of times.
func (d *Deployment) Wait() error {
	<-d.done
	return d.err
}

// Stop shuts both services down gracefully and waits for them.
func (d *Deployment) Stop() error {
	d.cancel()
	return d.Wait()
}

// Serve runs both services until ctx is cancelled, then drains them.
func Serve(ctx context.Context, dir string, o Options) error {
	d, err := Start(ctx, dir, o)
	if err != nil {
		return err
	}
	return d.Wait()
}
