package storeserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// AdminUser is the name of the administrator created by Init. The admin reads /v1/stats
// and /metrics and has no namespace of its own.
const AdminUser = "admin"

// UserInfo describes a user for 'user list'.
type UserInfo struct {
	Name    string
	Admin   bool
	Quota   int64 // 0: none
	Used    int64 // logical bytes
	Created time.Time
}

// userCache mirrors the users bucket for authentication without a database read. Only this
// process can change the database (bbolt holds an exclusive lock), so it stays exact.
type userCache struct {
	mu sync.RWMutex
	m  map[string]userRec
}

func loadUsers(db *bolt.DB) (*userCache, error) {
	c := &userCache{m: map[string]userRec{}}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(k, v []byte) error {
			u, err := parseUserRec(v)
			if err != nil {
				return fmt.Errorf("user %q: %w", k, err)
			}
			c.m[string(k)] = u
			return nil
		})
	})
	return c, err
}

// authenticate checks a user's secret; it returns the user's record.
func (c *userCache) authenticate(name, secret string) (userRec, bool) {
	c.mu.RLock()
	u, ok := c.m[name]
	c.mu.RUnlock()
	raw, err := base64.RawURLEncoding.DecodeString(secret)
	if err != nil {
		raw = nil
	}
	h := sha256.Sum256(raw)
	match := subtle.ConstantTimeCompare(h[:], u.secretHash[:]) == 1
	return u, ok && match && len(raw) == storewire.SecretSize
}

func (c *userCache) set(name string, u *userRec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u == nil {
		delete(c.m, name)
	} else {
		c.m[name] = *u
	}
}

// UserOption adjusts a new user.
type UserOption func(*userRec)

// WithQuota limits the user to n logical bytes (0: no quota).
func WithQuota(n int64) UserOption { return func(u *userRec) { u.quota = n } }

func withAdmin() UserOption { return func(u *userRec) { u.admin = true } }

// AddUser creates a user in the (not running) store at dir and returns their credential,
// which embeds the store's CA certificate.
func AddUser(dir, name string, opts ...UserOption) (storewire.Credential, error) {
	s, err := Open(dir, Config{})
	if err != nil {
		return storewire.Credential{}, err
	}
	defer s.Close()
	return s.AddUser(name, opts...)
}

// AddUser creates a user and returns their credential.
func (s *Service) AddUser(name string, opts ...UserOption) (storewire.Credential, error) {
	if err := storewire.CheckUser(name); err != nil {
		return storewire.Credential{}, err
	}
	ca, err := s.caPEM() // before the user exists: a credential without the CA is useless
	if err != nil {
		return storewire.Credential{}, fmt.Errorf("add user: %w", err)
	}
	secret := make([]byte, storewire.SecretSize)
	rand.Read(secret)
	u := userRec{secretHash: sha256.Sum256(secret), created: time.Now().Unix()}
	for _, o := range opts {
		o(&u)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		if users.Get([]byte(name)) != nil {
			return fmt.Errorf("user %q: %w", name, storage.ErrExists)
		}
		if _, err := tx.Bucket(bucketNS).CreateBucketIfNotExists([]byte(name)); err != nil {
			return err
		}
		if _, err := tx.Bucket(bucketCounts).CreateBucketIfNotExists([]byte(name)); err != nil {
			return err
		}
		return users.Put([]byte(name), u.marshal())
	})
	if err != nil {
		return storewire.Credential{}, fmt.Errorf("add user: %w", err)
	}
	s.users.set(name, &u)
	return storewire.Credential{Version: storewire.CredentialVersion, User: name,
		Secret: base64.RawURLEncoding.EncodeToString(secret), CA: string(ca)}, nil
}

// RemoveUser deletes a user and every name in their namespace; their content becomes
// garbage for gc unless other names reference it.
func (s *Service) RemoveUser(name string) error {
	if name == AdminUser {
		return fmt.Errorf("remove user: %w: the admin cannot be removed", storage.ErrPermission)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketUsers).Get([]byte(name)) == nil {
			return fmt.Errorf("user %q: %w", name, storage.ErrNotFound)
		}
		if ns := tx.Bucket(bucketNS).Bucket([]byte(name)); ns != nil {
			err := ns.ForEach(func(k, v []byte) error {
				e, err := parseEntry(v)
				if err != nil || e.isDir() {
					return err
				}
				return decref(tx, e.hash)
			})
			if err != nil {
				return err
			}
			if err := tx.Bucket(bucketNS).DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		if tx.Bucket(bucketCounts).Bucket([]byte(name)) != nil {
			if err := tx.Bucket(bucketCounts).DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketUsers).Delete([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("remove user: %w", err)
	}
	s.users.set(name, nil)
	return nil
}

// Users lists the users sorted by name, with their current usage.
func (s *Service) Users() ([]UserInfo, error) {
	var out []UserInfo
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(k, v []byte) error {
			u, err := parseUserRec(v)
			if err != nil {
				return fmt.Errorf("user %q: %w", k, err)
			}
			out = append(out, UserInfo{Name: string(k), Admin: u.admin, Quota: u.quota, Used: u.used, Created: time.Unix(u.created, 0)})
			return nil
		})
	})
	return out, err
}
