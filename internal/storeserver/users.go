package storeserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

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

// userCache mirrors the users for authentication without a database read. With bbolt only
// this process can change the database (it holds an exclusive lock), so it stays exact;
// with a shared database (PostgreSQL) a name that misses, a secret that does not match,
// or an account read more than userRecheck ago is read again from the database
// (reloadUser), so users added, changed or removed through another node are seen. Found
// deploying: a user removed through another node kept authenticating here until this
// node restarted, and a new user given the name had the old credential list their names.
type userCache struct {
	mu sync.RWMutex
	m  map[string]cachedUser
}

// cachedUser is an account and when it was read from the database.
type cachedUser struct {
	rec  userRec
	read time.Time
}

func loadUsers(m metaStore) (*userCache, error) {
	c := &userCache{m: map[string]cachedUser{}}
	now := time.Now()
	err := m.view(context.Background(), func(t metaTx) error {
		return t.users(func(name string, u userRec) error {
			c.m[name] = cachedUser{u, now}
			return nil
		})
	})
	return c, err
}

// fresh reports whether name's account was read from the database within maxAge.
func (c *userCache) fresh(name string, maxAge time.Duration) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.m[name]
	return ok && time.Since(u.read) < maxAge
}

func (c *userCache) get(name string) (userRec, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.m[name]
	return u.rec, ok
}

// reloadUser reads name's record from a shared database into the cache.
func (s *Service) reloadUser(name string) (userRec, bool) {
	var u userRec
	var ok bool
	err := s.meta.view(context.Background(), func(t metaTx) error {
		var err error
		u, _, ok, err = t.account(name)
		return err
	})
	if err != nil {
		return userRec{}, false
	}
	if !ok { // removed through another node
		s.users.set(name, nil)
		return userRec{}, false
	}
	s.users.set(name, &u)
	return u, true
}

// authenticate checks a user's secret; it returns the user's record.
func (c *userCache) authenticate(name, secret string) (userRec, bool) {
	c.mu.RLock()
	cu, ok := c.m[name]
	c.mu.RUnlock()
	u := cu.rec
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
		c.m[name] = cachedUser{*u, time.Now()}
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
	err = s.meta.update(context.Background(), "", func(t metaTx) error { return t.createUser(name, u) })
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
	err := s.meta.update(context.Background(), name, func(t metaTx) error {
		if _, _, ok, err := t.account(name); err != nil || !ok {
			return firstErr(err, fmt.Errorf("user %q: %w", name, storage.ErrNotFound))
		}
		var refs [][32]byte
		err := t.below(name, "", "", func(_, _ string, e entry) error {
			if !e.isDir() && e.size > 0 { // an empty object holds no reference (emptyContent)
				refs = append(refs, e.hash)
			}
			return nil
		})
		for _, h := range refs {
			if err == nil {
				err = t.decref(h)
			}
		}
		if err != nil {
			return err
		}
		return t.dropUser(name)
	})
	if err != nil {
		return fmt.Errorf("remove user: %w", err)
	}
	s.users.set(name, nil)
	return nil
}

// SetQuota changes a user's quota to n logical bytes (0: none). Usage already past the
// new quota stays stored; only writes that would grow it are refused. Other nodes of a
// shared database apply it within userRecheck (their transactions read the quota from
// the database; their cached account, which decides whether a write claims quota, is
// read again by the next request after that).
func (s *Service) SetQuota(name string, n int64) error {
	if n < 0 {
		return fmt.Errorf("set quota: negative quota %d", n)
	}
	if name == AdminUser {
		return fmt.Errorf("set quota: %w: the admin has no namespace", storage.ErrPermission)
	}
	var u userRec
	err := s.meta.update(context.Background(), name, func(t metaTx) error {
		if err := t.setQuota(name, n); err != nil {
			return err
		}
		var ok bool
		var err error
		u, _, ok, err = t.account(name)
		if err == nil && !ok {
			err = fmt.Errorf("user %q: %w", name, storage.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set quota: %w", err)
	}
	s.users.set(name, &u)
	return nil
}

// Users lists the users sorted by name, with their current usage.
func (s *Service) Users() ([]UserInfo, error) {
	var out []UserInfo
	err := s.meta.view(context.Background(), func(t metaTx) error {
		return t.users(func(name string, u userRec) error {
			out = append(out, UserInfo{Name: name, Admin: u.admin, Quota: u.quota, Used: u.used, Created: time.Unix(u.created, 0)})
			return nil
		})
	})
	return out, err
}

// userRecheck is how old a cached account may be before a node serving a shared database
// reads it again to authenticate a request.
var userRecheck = 2 * time.Second
