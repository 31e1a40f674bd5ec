package server

import (
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// OpenState opens (or creates) a server's bbolt state file at path: it waits at most
// timeout for another process holding it (then says so, naming who), checks the state's
// version in bucket "meta" (key "version") against version, records it in a new file, and
// creates the buckets. Every write afterwards is one bbolt transaction (crash-safe).
func OpenState(path, who, version string, timeout time.Duration, buckets ...[]byte) (*bbolt.DB, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w (is another %s running on it?)", path, err, who)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists([]byte("meta"))
		if err != nil {
			return err
		}
		if v := m.Get([]byte("version")); v != nil && string(v) != version {
			return fmt.Errorf("%s: state version %q, this veil reads %s", path, v, version)
		}
		if err := m.Put([]byte("version"), []byte(version)); err != nil {
			return err
		}
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
