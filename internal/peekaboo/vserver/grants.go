package vserver

import (
	"bytes"
	"fmt"
	"net/http"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// Pseudonym grants: clients register an HPKE public key; owners store grants (a pseudonym
// seed sealed to that key) for them; clients fetch their grants. The V-server learns who
// granted whom, never the pseudonym.

var (
	bucketClientKeys = []byte("clientkeys")
	bucketGrants     = []byte("grants")
)

func bucket(tx *bbolt.Tx, name []byte) (*bbolt.Bucket, error) {
	if tx.Writable() {
		return tx.CreateBucketIfNotExists(name)
	}
	if b := tx.Bucket(name); b != nil {
		return b, nil
	}
	return nil, nil
}

func (s *Server) handlePutClientKey(w http.ResponseWriter, r *http.Request, user string, body []byte) (int, error) {
	if _, err := wire.ParseKServerPub(body); err != nil {
		return http.StatusBadRequest, err
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bucketClientKeys)
		if err != nil {
			return err
		}
		return b.Put([]byte(user), body)
	})
	if err != nil {
		return http.StatusInternalServerError, err
	}
	writeBin(w, (&wire.Count{N: 1}).Marshal())
	return http.StatusOK, nil
}

func (s *Server) handleGetClientKey(w http.ResponseWriter, r *http.Request, _ string, _ []byte) (int, error) {
	var key []byte
	s.db.View(func(tx *bbolt.Tx) error {
		if b, _ := bucket(tx, bucketClientKeys); b != nil {
			key = bytes.Clone(b.Get([]byte(r.PathValue("name"))))
		}
		return nil
	})
	if key == nil {
		name := r.PathValue("name")
		s.usersMu.RLock()
		_, registered := s.users[name]
		s.usersMu.RUnlock()
		if !registered {
			return http.StatusNotFound, fmt.Errorf("no user %q is registered (check the spelling; the V-server's administrator adds users)", name)
		}
		return http.StatusNotFound, fmt.Errorf("%q has no client key registered yet: they must run 'veil peekaboo join' (again) before a pseudonym can be granted to them", name)
	}
	writeBin(w, key)
	return http.StatusOK, nil
}

func grantKey(to, from string) []byte { return append(append([]byte(to), 0), from...) }

func (s *Server) handlePutGrant(w http.ResponseWriter, r *http.Request, user string, body []byte) (int, error) {
	g, err := wire.ParseGrant(body)
	if err != nil {
		return http.StatusBadRequest, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bucketGrants)
		if err != nil {
			return err
		}
		return b.Put(grantKey(g.To, user), g.Sealed)
	})
	if err != nil {
		return http.StatusInternalServerError, err
	}
	writeBin(w, (&wire.Count{N: 1}).Marshal())
	return http.StatusOK, nil
}

func (s *Server) handleGetGrants(w http.ResponseWriter, r *http.Request, user string, _ []byte) (int, error) {
	out := &wire.Grants{}
	prefix := append([]byte(user), 0)
	s.db.View(func(tx *bbolt.Tx) error {
		b, _ := bucket(tx, bucketGrants)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out.Sealed) < wire.MaxGrants; k, v = c.Next() {
			out.Sealed = append(out.Sealed, bytes.Clone(v))
		}
		return nil
	})
	writeBin(w, out.Marshal())
	return http.StatusOK, nil
}
