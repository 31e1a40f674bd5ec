package storeserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/veil-project/veil/internal/server"
	"github.com/veil-project/veil/internal/storage"
)

// Config holds the service's limits and options; zero values take the defaults.
type Config struct {
	MaxObjectSize     int64           // largest object accepted (default 5 GiB)
	RequestTimeout    time.Duration   // whole-request read/write deadline (default 1 h)
	ReadHeaderTimeout time.Duration   // default 10 s
	IdleTimeout       time.Duration   // keep-alive idle limit (default 2 min)
	MaxConns          int             // concurrent connections; 0 means unlimited
	InsecureHTTP      bool            // serve plain HTTP (loopback development only)
	PublicMetrics     bool            // serve /metrics without the admin credential
	Blobs             storage.Backend // where content lives; nil means blobs/ in the data dir
	BlobLocation      string          // the location Blobs was opened from ("" with Blobs nil: local)
	ShutdownTimeout   time.Duration   // graceful drain limit (default server.DefaultShutdownTimeout)
	Logger            *slog.Logger    // default: discard
	Limits            Limits          // path, directory and metadata limits (zero: defaults)
	ProbeInterval     time.Duration   // how often a remote blob store is checked (default 2 s)
	ProbeTimeout      time.Duration   // how long a check may take (default 2 s)
	MaxBatchObjects   int             // objects per batch upload (default storage.BatchMaxObjects)
	MaxBatchBytes     int64           // content bytes per batch upload, held in memory (default storage.BatchMaxBytes)
	// Upgraded, when set, is told when Open took a single-machine store's database from an
	// older version to this veil's (dbversion.go), which older binaries then refuse: the
	// commands tell the operator, who may have meant to copy the store first.
	Upgraded func(from, to int)
}

// DefaultAddr is the address the storage service listens on unless told otherwise.
const DefaultAddr = "127.0.0.1:7480"

// DefaultConfig holds the values zero fields of a Config take.
func DefaultConfig() Config {
	return Config{MaxObjectSize: 5 << 30, RequestTimeout: time.Hour, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, ShutdownTimeout: server.DefaultShutdownTimeout,
		Limits: Limits{MaxDepth: DefaultMaxDepth, MaxNameLen: storage.MaxNameLen, MaxPathLen: DefaultMaxPathLen,
			MaxDirEntries: DefaultMaxDirEntries},
		ProbeInterval: 2 * time.Second, ProbeTimeout: 2 * time.Second,
		MaxBatchObjects: storage.BatchMaxObjects, MaxBatchBytes: storage.BatchMaxBytes}
}

func (c *Config) defaults() {
	d := DefaultConfig()
	if c.MaxObjectSize <= 0 {
		c.MaxObjectSize = d.MaxObjectSize
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	c.Limits.defaults()
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = d.ProbeInterval
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = d.ProbeTimeout
	}
	if c.MaxBatchObjects <= 0 {
		c.MaxBatchObjects = d.MaxBatchObjects
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = d.MaxBatchBytes
	}
	c.ShutdownTimeout = server.ShutdownTimeout(c.ShutdownTimeout)
	c.Logger = server.Logger(c.Logger, "store")
}

// ErrNotInitialized is a data directory without a store; ErrBusy one whose database is held
// by another process (a running server).
var (
	ErrNotInitialized = errors.New("not a store data directory (run 'veil store init')")
	ErrBusy           = errors.New("store database is in use by another process (a running 'veil store serve'? use --url and the admin credential)")
)

// Service is an open store: the metadata database (meta.go), the blob store and the
// in-memory state that coordinates uploads with gc.
type Service struct {
	dir    string
	cfg    Config
	meta   metaStore
	blobs  blobStore
	tmpDir string

	// quota is each user's reservations, claims and reads of the usage in flight
	// (quota.go), guarded by holdMu (never held over a database read). nHeld counts the
	// reservations of all users.
	holdMu sync.Mutex
	quota  map[string]*quotaBook
	nHeld  atomic.Int64

	users   *userCache
	metrics *metrics
	stop    context.CancelFunc // ends the blob store probe
	br      *breaker           // the remote blob store's breaker (nil: blobs on disk)
	ready   readiness          // the last /readyz check (readiness.go)
	probing sync.WaitGroup
}

const (
	dbFile   = "meta.db"
	tmpName  = "tmp"
	blobName = "blobs"
	tlsName  = "tls"
	// AdminCredentialFile is the admin's credential, written by Init into the data dir.
	AdminCredentialFile = "admin.cred"
)

// Open opens an initialized data directory. With bbolt only one process may hold it at a
// time; with PostgreSQL any number of nodes serve copies of it.
func Open(dir string, cfg Config) (*Service, error) {
	cfg.defaults()
	dsn, err := MetaDB(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, dbFile)); err != nil && dsn == "" {
		return nil, fmt.Errorf("open store %s: %w", dir, ErrNotInitialized)
	}
	if err := matchLocation(dir, cfg); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s := &Service{dir: dir, cfg: cfg, tmpDir: filepath.Join(dir, tmpName), metrics: newMetrics(), quota: map[string]*quotaBook{}}
	if s.meta, err = openMeta(dir, dsn, cfg, func(n int) { s.metrics.group.Observe(float64(n)) }); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s.stop = func() {}
	if cfg.Blobs != nil {
		br := &breaker{onChange: func(open bool, cause error) {
			if open {
				cfg.Logger.Warn("blob storage unavailable: answering 503", "err", cause)
			} else {
				cfg.Logger.Info("blob storage answers again")
			}
		}}
		s.blobs, s.br = guardedBlobs{backendBlobs{cfg.Blobs}, br}, br
		ctx, cancel := context.WithCancel(context.Background())
		s.stop = cancel
		s.probing.Add(1)
		go func() {
			defer s.probing.Done()
			br.probeLoop(ctx, cfg.Blobs, cfg.ProbeInterval, cfg.ProbeTimeout)
		}()
	} else {
		s.blobs = diskBlobs{filepath.Join(dir, blobName)}
	}
	if s.users, err = loadUsers(s.meta); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, nil
}

// openMeta opens the metadata: PostgreSQL at dsn, or meta.db in dir when dsn is "".
func openMeta(dir, dsn string, cfg Config, groups func(int)) (metaStore, error) {
	if dsn != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return openPGMeta(ctx, dsn, cfg.RequestTimeout, groups)
	}
	db, from, err := openDB(filepath.Join(dir, dbFile), false)
	if err != nil {
		return nil, err
	}
	if from != 0 {
		// Warn: 'veil serve' logs warnings only, and older binaries refuse the store now.
		cfg.Logger.Warn("upgraded the metadata database: older veil binaries refuse it now", "from", from, "to", dbVersion)
		if cfg.Upgraded != nil {
			cfg.Upgraded(int(from), dbVersion)
		}
	}
	if err := buildCounts(db); err != nil {
		db.Close()
		return nil, err
	}
	return newBoltMeta(db, groups), nil
}

// openDB opens (or creates) meta.db, and reports the older version it upgraded the
// database from (0: none).
func openDB(path string, create bool) (*bolt.DB, byte, error) {
	// The freelist is rebuilt on open instead of written on every commit: fewer pages per
	// commit, same durability (bbolt's documented trade: slower open of huge databases).
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoFreelistSync: true,
		FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, 0, ErrBusy
	}
	if err != nil {
		return nil, 0, err
	}
	var from byte
	if create {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketUsers, bucketNS, bucketBlobs, bucketMeta, bucketData, bucketCounts} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(versionKey, []byte{dbVersion})
		})
	} else {
		from, err = checkBoltDB(db)
	}
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, from, nil
}

var (
	bucketUsers = []byte("users")
	bucketNS    = []byte("ns")
	bucketBlobs = []byte("blobs")
	bucketMeta  = []byte("meta")
	bucketData  = []byte("data")
)

// InlineMax is the largest content kept inside the database instead of a file of its own:
// small objects then cost one shared database commit instead of two fsyncs each.
const InlineMax = 64 << 10

// Close closes the database. Call it after Serve has returned.
func (s *Service) Close() error {
	s.stop()
	s.probing.Wait()
	return s.meta.close()
}

// Dir returns the data directory.
func (s *Service) Dir() string { return s.dir }
