package keyserver

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/server"
)

var (
	bucketCounts = []byte("counts")
	bucketExp    = []byte("exp")
)

// boltStore keeps rate-limit state in a bbolt file. Bounded counts are kept in memory and
// persisted as a reservation ahead of use (count + max(1, limit/100)), so the file is
// written about a hundred times per epoch per busy client rather than per query; after a
// crash a client resumes from its reservation, never below its true count. A graceful
// Close writes exact counts.
type boltStore struct {
	db     *bolt.DB
	mu     sync.Mutex
	counts map[string]*boltCount
	locks  map[string]time.Time
}

type boltCount struct {
	epoch, count, reserved int64
}

func openBoltStore(path string) (*boltStore, error) {
	db, err := server.OpenState(path, "key server", "1", time.Second, bucketCounts, bucketExp)
	if err != nil {
		return nil, err
	}
	return &boltStore{db: db, counts: map[string]*boltCount{}, locks: map[string]time.Time{}}, nil
}

func pair(a, b int64) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(a))
	return binary.BigEndian.AppendUint64(v, uint64(b))
}

func unpair(v []byte) (int64, int64, bool) {
	if len(v) != 16 {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:])), true
}

func (s *boltStore) put(bucket []byte, client string, a, b int64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put([]byte(client), pair(a, b))
	})
}

func (s *boltStore) get(bucket []byte, client string) (a, b int64, ok bool) {
	s.db.View(func(tx *bolt.Tx) error {
		a, b, ok = unpair(tx.Bucket(bucket).Get([]byte(client)))
		return nil
	})
	return
}

func (s *boltStore) Take(_ context.Context, client string, epoch, n, limit int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts[client]
	if c == nil {
		c = &boltCount{}
		if e, r, ok := s.get(bucketCounts, client); ok {
			c.epoch, c.count, c.reserved = e, r, r
		}
		s.counts[client] = c
	}
	switch {
	case epoch > c.epoch:
		c.epoch, c.count, c.reserved = epoch, 0, 0
	case epoch < c.epoch:
		// A request that computed its epoch before a boundary but reached the store after
		// one of the next epoch (or a clock stepped back): it counts against the newer
		// epoch; resetting would hand the newer epoch's budget out twice.
		epoch = c.epoch
	}
	if c.count+n > limit {
		return false, nil
	}
	if c.count+n > c.reserved {
		res := min(limit, c.count+n+max(1, limit/100))
		if err := s.put(bucketCounts, client, epoch, res); err != nil {
			return false, err
		}
		c.reserved = res
	}
	c.count += n
	return true, nil
}

func (s *boltStore) Lock(_ context.Context, client string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if exp, ok := s.locks[client]; ok && time.Now().Before(exp) {
		return false, nil
	}
	s.locks[client] = time.Now().Add(ttl)
	return true, nil
}

func (s *boltStore) Unlock(_ context.Context, client string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.locks, client)
	return nil
}

func (s *boltStore) ExpDelay(_ context.Context, client string, epoch int64, n int, start, max time.Duration) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, cur, _ := s.get(bucketExp, client)
	total, next := expStep(last, cur, epoch, n, start, max)
	return total, s.put(bucketExp, client, epoch, next)
}

// Close writes the exact counts and closes the file.
func (s *boltStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCounts)
		for client, c := range s.counts {
			if err := b.Put([]byte(client), pair(c.epoch, c.count)); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}
