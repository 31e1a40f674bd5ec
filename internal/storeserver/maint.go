package storeserver

import (
	"context"
	"fmt"
	"github.com/veil-project/veil/internal/atomicfile"

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

// GC removes unreferenced blobs, orphaned content and the upload files in this data
// directory no upload holds (tmpfiles.go), a node's serving it included. It never removes
// a blob an upload is about to reference (metaStore.hold).
func (s *Service) GC(ctx context.Context) (GCReport, error) {
	rep, err := s.meta.collect(ctx, s.blobs)
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	stale, err := staleUploads(s.tmpDir)
	for _, p := range stale {
		if atomicfile.ClaimStale(p, true) {
			rep.StaleUploads++
		}
	}
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	return rep, nil
}
