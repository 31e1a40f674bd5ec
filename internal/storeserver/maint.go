package storeserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/storewire"
)

// Stats are the service's totals: what users stored (logical) and what the service keeps
// (physical, including garbage not yet collected).
type Stats = storewire.Stats

// Stats counts users, objects, logical and physical bytes.
func (s *Service) Stats() (Stats, error) {
	var st Stats
	err := s.meta.view(context.Background(), func(t metaTx) error {
		st = Stats{}
		var names []string
		err := t.users(func(name string, u userRec) error {
			if !u.admin {
				st.Users++
			}
			st.LogicalBytes += u.used
			names = append(names, name)
			return nil
		})
		if err != nil {
			return err
		}
		for _, name := range names {
			err := t.below(name, "", "", func(_, _ string, e entry) error {
				if !e.isDir() {
					st.Objects++
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return t.blobs(func(_ [32]byte, r blobRec) error {
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

// GC removes unreferenced blobs, orphaned content and this node's stale upload files. It
// never removes a blob an upload is about to reference (metaStore.hold).
func (s *Service) GC(ctx context.Context) (GCReport, error) {
	rep, err := s.meta.collect(ctx, s.blobs)
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	s.tmpMu.Lock()
	defer s.tmpMu.Unlock()
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
