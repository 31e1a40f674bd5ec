package profile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/invite"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/open"
	"github.com/veil-project/veil/internal/storewire"
)

// Files in a profile directory.
const (
	ConfigFile = "config.json"
	KeyFile    = "key"
	KSCredFile = "keyserver.cred"
	StoreCred  = "store.cred"
)

// Config is config.json. Empty fields mean "not configured".
type Config struct {
	Version     int    `json:"veil_profile"`
	User        string `json:"user,omitempty"`
	Storage     string `json:"storage"`                // location: a path, s3://..., veil://host:port
	KSTransport string `json:"ks_transport,omitempty"` // https (default) or udp
	KSTimeout   string `json:"ks_timeout,omitempty"`   // per-attempt timeout t_R (default 2s)
	// KSURLs are the key server's replicas (HTTPS URLs); empty: the credential's one URL.
	// Derivations are spread over them, with failover from one that does not answer.
	KSURLs []string `json:"ks_urls,omitempty"`
	NoKS   bool     `json:"no_keyserver,omitempty"` // store under random keys (no dedup)
}

// Environment variables that override the profile.
const (
	EnvConfig   = "VEIL_CONFIG"        // profile directory
	EnvStorage  = "VEIL_STORAGE"       // storage location
	EnvPassword = "VEIL_PASSWORD_FILE" // file holding the passphrase
	EnvKSCred   = "VEIL_KS_CREDENTIAL" // key server credential file
	EnvKSURL    = "VEIL_KS_URL"        // key server HTTPS URL override
)

// Overrides are the settings a user gives through the environment (Env* above). cmd/veil
// reads them (EnvOverrides); this package never reads the environment itself.
type Overrides struct {
	Storage      string           // storage location instead of the profile's ($VEIL_STORAGE)
	KSCredential string           // key server credential file ($VEIL_KS_CREDENTIAL)
	KSURL        string           // key server HTTPS URL ($VEIL_KS_URL)
	Credentials  open.Credentials // S3 keys and store credential file for the location
}

// EnvOverrides reads the overrides through getenv (os.Getenv in cmd/veil).
func EnvOverrides(getenv func(string) string) Overrides {
	return Overrides{Storage: getenv(EnvStorage), KSCredential: getenv(EnvKSCred), KSURL: getenv(EnvKSURL),
		Credentials: open.EnvCredentials(open.Credentials{}, getenv)}
}

// InitOptions say what `veil init` sets up.
type InitOptions struct {
	Invite       []byte           // an invitation from `veil serve adduser` (sets everything below)
	Storage      string           // storage location
	StoreCredRaw []byte           // store credential file contents, for veil:// locations
	KSCredRaw    []byte           // key server credential file contents
	NoKS         bool             // no key server: random keys, no dedup
	Transport    string           // key server transport: https (default) or udp
	KSTimeout    string           // per-attempt key server timeout, a Go duration ("" = default)
	KSURLs       []string         // the key server's replicas (HTTPS URLs; empty: the credential's)
	Credentials  open.Credentials // S3 keys for an s3:// location (veil:// uses StoreCredRaw)
	// KSURLOverride is $VEIL_KS_URL (Overrides.KSURL): the credential check asks those
	// replicas, as every later command does, but they are not written (an override).
	KSURLOverride string
	// Warn is told what init found and went on despite (a key server it could not reach to
	// check the credential). nil: not told.
	Warn func(error)
}

// Init creates a profile in dir with a fresh master key sealed under passphrase.
//
// The key server credential is tried first (checkKS): one the key server refuses fails
// init, a key server that cannot be reached is a warning. Then the storage location: a
// local directory is created, a remote one must answer (with the credential), so a typo
// or a service that is down fails init at once.
func Init(ctx context.Context, dir string, passphrase []byte, o InitOptions) (*Config, error) {
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); err == nil {
		return nil, fmt.Errorf("%s already holds a veil key; refusing to overwrite it (pick another --config)", dir)
	}
	if o.KSTimeout != "" {
		if _, err := time.ParseDuration(o.KSTimeout); err != nil {
			return nil, fmt.Errorf("key server timeout %q: %w", o.KSTimeout, err)
		}
	}
	if o.Transport != "" && o.Transport != "https" && o.Transport != "udp" {
		return nil, fmt.Errorf("key server transport %q: want https or udp", o.Transport)
	}
	for _, u := range o.KSURLs {
		if !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("key server url %q: want https://host:port", u)
		}
	}
	for _, u := range ksURLs(nil, o.KSURLOverride) {
		if !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("$%s: key server url %q: want https://host:port", EnvKSURL, u)
		}
	}
	cfg := &Config{Version: 1, Storage: o.Storage, NoKS: o.NoKS, KSTransport: o.Transport, KSTimeout: o.KSTimeout, KSURLs: o.KSURLs}
	storeCred, ksCred := o.StoreCredRaw, o.KSCredRaw
	if o.Invite != nil {
		if kind := otherKind(o.Invite, "invite"); kind != "" {
			return nil, fmt.Errorf("the invitation is %s", kind)
		}
		inv, err := invite.Parse(o.Invite)
		if err != nil {
			return nil, err
		}
		cfg.User, cfg.Storage, ksCred = inv.User, inv.Storage, inv.KSCredential
		if inv.Store != nil {
			storeCred, _ = json.MarshalIndent(inv.Store, "", "  ")
		}
	}
	if cfg.Storage == "" {
		return nil, errors.New("no storage location (use --storage or --invite)")
	}
	if ksCred == nil && !cfg.NoKS {
		return nil, errors.New("no key server credential (use --ks-credential or --invite; --no-keyserver stores without dedup)")
	}
	if ksCred != nil {
		if kind := otherKind(ksCred, "ks"); kind != "" {
			return nil, fmt.Errorf("the key server credential is %s", kind)
		}
		cred, err := ksclient.ParseCredential(ksCred)
		if err != nil {
			return nil, fmt.Errorf("key server credential: %w", err)
		}
		if !cfg.NoKS {
			if err := checkKS(ctx, cred, cfg, ksURLs(cfg.KSURLs, o.KSURLOverride), o.Warn); err != nil {
				return nil, err
			}
		}
	}
	be, err := checkStorage(ctx, cfg.Storage, storeCred, o.Credentials)
	if err != nil {
		return nil, err
	}
	master := dupless.NewMasterKey()
	kf, err := dupless.SealKeyFile(master, passphrase)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cb, _ := json.MarshalIndent(cfg, "", "  ")
	files := []struct {
		name string
		data []byte
	}{{KSCredFile, ksCred}, {StoreCred, storeCred}, {ConfigFile, cb}, {KeyFile, kf}}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.data, 0o600, true); err != nil {
			return nil, err
		}
	}
	// The location is this key's from now on (dupless.Claim): after the key is written,
	// so that a claim never names a key that was lost. Another key's claim (a second init
	// racing this one) undoes this profile; a claim that cannot be written now is made by
	// the first command that changes the location, as before.
	c, err := dupless.New(be, master, dupless.Options{})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Claim(ctx); errors.Is(err, dupless.ErrForeignKey) {
		for _, f := range files {
			os.Remove(filepath.Join(dir, f.name))
		}
		return nil, fmt.Errorf("storage %s: %w", cfg.Storage, err)
	}
	return cfg, nil
}

// ChangePassphrase re-seals the master key in dir under a new passphrase (fresh salt and
// nonce). The key itself does not change, so everything stored stays readable; the old
// passphrase no longer opens the key file. The key file is replaced atomically.
func ChangePassphrase(dir string, old, new []byte) error {
	path := filepath.Join(dir, KeyFile)
	kf, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no veil key in %s (run 'veil init', or set %s)", dir, EnvConfig)
	}
	if err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	master, err := dupless.OpenKeyFile(kf, old)
	if err != nil {
		return err
	}
	sealed, err := dupless.SealKeyFile(master, new)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, sealed, 0o600, true)
}

// Load reads the profile in dir and applies the overrides.
func Load(dir string, ov Overrides) (*Config, error) {
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no veil profile in %s (run 'veil init', or set %s)", dir, EnvConfig)
	}
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	if ov.Storage != "" {
		c.Storage = ov.Storage
	}
	return &c, nil
}

// ClientOptions are the per-run settings the CLI passes through.
type ClientOptions struct {
	Overrides   Overrides
	NoRootCheck bool // reads warn instead of failing when the tree root does not vouch for a record
	Jobs        int
	Force       bool              // put: read every file, even unchanged ones
	Exclude     []string          // put: patterns of entries to skip
	Overwrite   dupless.Overwrite // get: what happens to existing files at the destination
	GetInclude  []string          // get: only entries matching these patterns
	GetExclude  []string          // get: not entries matching these patterns
	Events      dupless.Events
	Logger      *slog.Logger
}

// Open unlocks the master key with passphrase and connects to the storage service and key
// server. The returned close function releases both.
func Open(ctx context.Context, dir string, passphrase []byte, o ClientOptions) (*dupless.Client, func(), error) {
	cfg, err := Load(dir, o.Overrides)
	if err != nil {
		return nil, nil, err
	}
	kf, err := readKeyFile(dir)
	if err != nil {
		return nil, nil, err
	}
	master, err := dupless.OpenKeyFile(kf, passphrase)
	if err != nil {
		return nil, nil, err
	}
	be, err := OpenStorage(ctx, dir, o.Overrides)
	if err != nil {
		return nil, nil, err
	}
	dopts := dupless.Options{Jobs: o.Jobs, Events: o.Events, Logger: o.Logger, Force: o.Force, Exclude: o.Exclude, Overwrite: o.Overwrite, GetInclude: o.GetInclude, GetExclude: o.GetExclude,
		Roots: dupless.RootFile(RootMemoryFile(dir, cfg.Storage), legacyRootMemoryFile(dir, cfg.Storage)),
		Cache: &dupless.PutCache{Path: PutCacheFile(dir, cfg.Storage), Location: cfg.Storage}}
	if o.NoRootCheck {
		dopts.RootCheck = dupless.RootWarn
	}
	lazy := &lazyKS{open: func() (*ksclient.Client, error) { return openKS(dir, cfg, o.Overrides, o.Logger) }}
	if !cfg.NoKS {
		dopts.Keys = lazy
	}
	c, err := dupless.New(be, master, dopts)
	if err != nil {
		return nil, nil, err
	}
	return c, func() {
		c.Close()
		lazy.close()
	}, nil
}

// RootMemoryFile is where the profile in dir remembers the newest tree root it has seen
// at a storage location (docs/security.md, "Rollback").
func RootMemoryFile(dir, location string) string {
	h := sha256.Sum256([]byte(location))
	return filepath.Join(dir, "roots", hex.EncodeToString(h[:8])+".mem")
}

// legacyRootMemoryFile is where a veil before session 8 remembered it (a JSON file, read
// while it exists and removed by the next save).
func legacyRootMemoryFile(dir, location string) string {
	h := sha256.Sum256([]byte(location))
	return filepath.Join(dir, "roots", hex.EncodeToString(h[:8])+".json")
}

// PutCacheFile is where the profile in dir keeps put's cache of what it stored at a storage
// location (docs/formats/put-cache.md); deleting it is safe (the next put rebuilds it).
func PutCacheFile(dir, location string) string {
	h := sha256.Sum256([]byte(location))
	return filepath.Join(dir, "cache", hex.EncodeToString(h[:8])+".put")
}

// lazyKS connects to the key server on first use: only storing needs it, so get, ls, rm
// and prune work without it (even with a broken or missing key server credential).
type lazyKS struct {
	open func() (*ksclient.Client, error)
	once sync.Once
	c    *ksclient.Client
	err  error
}

func (l *lazyKS) client() (*ksclient.Client, error) {
	l.once.Do(func() { l.c, l.err = l.open() })
	return l.c, l.err
}

func (l *lazyKS) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	c, err := l.client()
	if err != nil {
		return nil, fmt.Errorf("key server unavailable: %w", err)
	}
	return c.DeriveKeys(ctx, ds)
}

func (l *lazyKS) KeyID() string {
	if c, err := l.client(); err == nil {
		return c.KeyID()
	}
	return ""
}

func (l *lazyKS) close() {
	if l.c != nil {
		l.c.Close()
	}
}

// OpenStorage connects to the profile's storage service as the user, without encryption
// (for benchmarks that compare with plain puts, and for diagnostics).
func OpenStorage(ctx context.Context, dir string, ov Overrides) (storage.Backend, error) {
	cfg, err := Load(dir, ov)
	if err != nil {
		return nil, err
	}
	location := cfg.Storage
	if err := existingLocal(location); err != nil {
		return nil, err
	}
	cred := ov.Credentials
	if b, err := os.ReadFile(filepath.Join(dir, StoreCred)); err == nil {
		var sc storewire.Credential
		if err := json.Unmarshal(b, &sc); err != nil {
			return nil, fmt.Errorf("%s: %w", StoreCred, err)
		}
		cred.Store = &sc
	}
	be, err := open.Open(ctx, location, cred)
	if err != nil {
		return nil, fmt.Errorf("storage %s: %w", location, err)
	}
	return be, nil
}

func openKS(dir string, cfg *Config, ov Overrides, log *slog.Logger) (*ksclient.Client, error) {
	path := ov.KSCredential
	if path == "" {
		path = filepath.Join(dir, KSCredFile)
	}
	cred, err := ksclient.LoadCredential(path)
	if err != nil {
		return nil, err
	}
	return newKS(cred, cfg, ksURLs(cfg.KSURLs, ov.KSURL), log)
}

// ksURLs are the key server replicas to ask: those of override ($VEIL_KS_URL: one URL, or
// replicas separated by commas) when set, else the profile's (empty: the credential's).
func ksURLs(profile []string, override string) []string {
	if override != "" {
		return strings.Split(override, ",")
	}
	return profile
}

// newKS is the key server client of a profile's settings (cfg) for cred; urls, if any, are
// the replicas to ask instead of the credential's URL.
func newKS(cred *ksclient.Credential, cfg *Config, urls []string, log *slog.Logger) (*ksclient.Client, error) {
	opts := ksclient.Options{Transport: cfg.KSTransport, Logger: log}
	if len(urls) > 0 {
		opts.URL, opts.Replicas = urls[0], urls[1:]
	}
	if cfg.KSTimeout != "" {
		var err error
		if opts.Timeout, err = time.ParseDuration(cfg.KSTimeout); err != nil {
			return nil, fmt.Errorf("ks_timeout %q: %w", cfg.KSTimeout, err)
		}
	}
	return ksclient.New(cred, opts)
}
