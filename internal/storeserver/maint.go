package storeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// Stats are the service's totals: what users stored (logical) and what the service keeps
// (physical, including garbage not yet collected).
type Stats = storewire.Stats

// Stats counts users, objects, logical and physical bytes.
func (s *Service) Stats() (Stats, error) {
	var st Stats
	err := s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketUsers).ForEach(func(k, v []byte) error {
			u, err := parseUserRec(v)
			if err != nil {
				return err
			}
			if !u.admin {
				st.Users++
			}
			st.LogicalBytes += u.used
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketNS).ForEachBucket(func(k []byte) error {
			return tx.Bucket(bucketNS).Bucket(k).ForEach(func(_, v []byte) error {
				if len(v) > 1 && v[1] == kindFile {
					st.Objects++
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketBlobs).ForEach(func(_, v []byte) error {
			r, err := parseBlobRec(v)
			if err != nil {
				return err
			}
			st.Blobs++
			st.PhysicalBytes += r.size
			if r.refs == 0 {
				st.GarbageBlobs++
				st.GarbageBytes += r.size
			}
			return nil
		})
	})
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	if live := st.PhysicalBytes - st.GarbageBytes; live > 0 {
		st.DedupRatio = float64(st.LogicalBytes) / float64(live)
	}
	return st, nil
}

// GCReport says what a collection reclaimed.
type GCReport struct {
	Blobs        int64 // unreferenced blobs removed
	Bytes        int64 // their bytes
	OrphanBlobs  int64 // content files without a record (an upload interrupted by a crash)
	StaleUploads int64 // temporary upload files of no live upload
}

// GC removes unreferenced blobs, orphaned content and stale upload files. Uploads wait
// while it sweeps, so no blob an upload is about to reference can disappear.
func (s *Service) GC(ctx context.Context) (GCReport, error) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	var rep GCReport
	var dead [][32]byte // unreferenced blobs in the blob store
	known := map[[32]byte]bool{}
	var gone [][32]byte // every unreferenced record
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBlobs)
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r, err := parseBlobRec(v)
			if err != nil {
				return err
			}
			var h [32]byte
			copy(h[:], k)
			switch {
			case r.refs > 0:
				known[h] = true
			case r.inline:
				if err := tx.Bucket(bucketData).Delete(dataKey(r.dataID)); err != nil {
					return err
				}
				fallthrough
			default:
				if !r.inline {
					dead = append(dead, h)
				}
				rep.Blobs++
				rep.Bytes += r.size
				gone = append(gone, h)
			}
		}
		for _, h := range gone {
			if err := b.Delete(h[:]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	for _, h := range dead {
		if err := s.blobs.remove(ctx, h); err != nil {
			return rep, fmt.Errorf("gc: remove %x: %w", h[:8], err)
		}
	}
	var orphans [][32]byte
	err = s.blobs.list(ctx, func(h [32]byte) error {
		if !known[h] {
			orphans = append(orphans, h)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("gc: list blobs: %w", err)
	}
	for _, h := range orphans {
		if err := s.blobs.remove(ctx, h); err != nil {
			return rep, fmt.Errorf("gc: remove orphan %x: %w", h[:8], err)
		}
		rep.OrphanBlobs++
	}
	stale, err := s.staleUploads()
	for _, p := range stale {
		if os.Remove(p) == nil {
			rep.StaleUploads++
		}
	}
	return rep, err
}

func (s *Service) staleUploads() ([]string, error) {
	ents, err := os.ReadDir(s.tmpDir)
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(s.tmpDir, e.Name())
		if _, live := s.active.Load(p); !live {
			out = append(out, p)
		}
	}
	return out, nil
}

// FsckReport lists problems (corruption: the store is not clean) and reclaimable leftovers
// of crashes (not problems; gc removes them).
type FsckReport struct {
	Problems     []string `json:"problems"`
	Objects      int64    `json:"objects"`
	Blobs        int64    `json:"blobs"`
	OrphanBlobs  int64    `json:"orphan_blobs"`
	StaleUploads int64    `json:"stale_uploads"`
	GarbageBlobs int64    `json:"garbage_blobs"`
}

// Clean reports whether fsck found no problem.
func (r FsckReport) Clean() bool { return len(r.Problems) == 0 }

// Fsck checks every record, every reference count and user total, and re-hashes every blob.
func (s *Service) Fsck(ctx context.Context) (FsckReport, error) {
	rep := FsckReport{Problems: []string{}}
	problem := func(f string, a ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(f, a...)) }
	recs := map[[32]byte]blobRec{}
	err := s.db.View(func(tx *bolt.Tx) error {
		refs := map[[32]byte]int64{}
		s.fsckNamespaces(tx, refs, &rep, problem)
		return tx.Bucket(bucketBlobs).ForEach(func(k, v []byte) error {
			var h [32]byte
			copy(h[:], k)
			r, err := parseBlobRec(v)
			if err != nil || len(k) != 32 {
				problem("blob record %x: %v", k, err)
				return nil
			}
			if r.refs != refs[h] {
				problem("blob %x: reference count %d, but %d names point at it", h[:8], r.refs, refs[h])
			}
			delete(refs, h)
			if r.refs == 0 {
				rep.GarbageBlobs++
			}
			recs[h] = r
			return nil
		})
	})
	if err != nil {
		return rep, fmt.Errorf("fsck: %w", err)
	}
	for h, r := range recs {
		rep.Blobs++
		if err := s.checkBlob(ctx, h, r); err != nil && r.refs > 0 {
			problem("blob %x: %v", h[:8], err)
		}
	}
	err = s.blobs.list(ctx, func(h [32]byte) error {
		if _, ok := recs[h]; !ok {
			rep.OrphanBlobs++
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("fsck: %w", err)
	}
	stale, err := s.staleUploads()
	rep.StaleUploads = int64(len(stale))
	return rep, err
}

func (s *Service) fsckNamespaces(tx *bolt.Tx, refs map[[32]byte]int64, rep *FsckReport, problem func(string, ...any)) {
	users := tx.Bucket(bucketUsers)
	tx.Bucket(bucketNS).ForEachBucket(func(user []byte) error {
		var used, meta int64
		per := map[string]int64{}
		ns := tx.Bucket(bucketNS).Bucket(user)
		ns.ForEach(func(k, v []byte) error {
			dir, name, err := splitKey(k)
			if err == nil {
				err = storage.CheckPath(dir, name)
			}
			if err != nil {
				problem("user %s: key %q: %v", user, k, err)
				return nil
			}
			e, err := parseEntry(v)
			if err != nil {
				problem("user %s: %s: %v", user, k, err)
				return nil
			}
			per[dir]++
			meta += metaCost(dir, name)
			if err := dirExists(ns, dir); err != nil {
				problem("user %s: %s/%s: parent: %v", user, dir, name, err)
			}
			if !e.isDir() {
				rep.Objects++
				used += e.size
				refs[e.hash]++
				if v := tx.Bucket(bucketBlobs).Get(e.hash[:]); v == nil {
					problem("user %s: %s/%s: content %x has no record", user, dir, name, e.hash[:8])
				}
			}
			return nil
		})
		fsckCounts(tx.Bucket(bucketCounts).Bucket(user), string(user), per, meta, problem)
		u, err := parseUserRec(users.Get(user))
		if err != nil {
			problem("namespace %s: user record: %v", user, err)
		} else if u.used != used {
			problem("user %s: records %d logical bytes, names hold %d", user, u.used, used)
		}
		return nil
	})
}

// fsckCounts compares a user's accounting (entries per directory, metadata bytes) with
// what the namespace holds.
func fsckCounts(c *bolt.Bucket, user string, per map[string]int64, meta int64, problem func(string, ...any)) {
	if c == nil {
		problem("user %s: no accounting bucket", user)
		return
	}
	if got := getU64(c, metaKey); got != meta {
		problem("user %s: records %d metadata bytes, names hold %d", user, got, meta)
	}
	c.ForEach(func(k, _ []byte) error {
		if len(k) > 0 && k[0] == 'd' {
			if want := per[string(k[1:])]; getU64(c, k) != want {
				problem("user %s: directory %q counts %d entries, holds %d", user, k[1:], getU64(c, k), want)
			}
			delete(per, string(k[1:]))
		}
		return nil
	})
	for d, n := range per {
		problem("user %s: directory %q holds %d entries, counted 0", user, d, n)
	}
}

// checkBlob re-hashes one blob.
func (s *Service) checkBlob(ctx context.Context, h [32]byte, r blobRec) error {
	var rc io.ReadCloser
	var n int64
	var err error
	if r.inline {
		var data []byte
		s.db.View(func(tx *bolt.Tx) error {
			data = bytes.Clone(tx.Bucket(bucketData).Get(dataKey(r.dataID)))
			return nil
		})
		if data == nil {
			return fmt.Errorf("inline content missing")
		}
		rc, n = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	} else if rc, n, err = s.blobs.open(ctx, h); err != nil {
		return fmt.Errorf("content missing: %w", err)
	}
	defer rc.Close()
	if n != r.size {
		return fmt.Errorf("content has %d bytes, recorded %d", n, r.size)
	}
	d := sha256.New()
	if _, err := io.Copy(d, rc); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	var got [32]byte
	if d.Sum(got[:0]); got != h {
		return fmt.Errorf("content is corrupt (hashes to %x)", got[:8])
	}
	return nil
}
