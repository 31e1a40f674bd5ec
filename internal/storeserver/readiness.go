package storeserver

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Readiness (GET /readyz, session 16): /healthz answers as long as the process serves
// (liveness), so a load balancer kept sending requests to a node whose metadata database
// was down, each answered 503. /readyz answers 503 naming the parts the node cannot reach
// (the metadata database: a ping bounded by the probe timeout, for bbolt a read of the
// open database; the blob store: its breaker, which the probe loop keeps current) and a
// data directory that cannot take a write (diskProblem: session 17; before, a full disk
// left the node ready and every put answered 507), so the node can be taken out of
// rotation. It needs no credential: the answer names the parts, never the causes (which
// carry host and user names, paths); the causes go to the node's log, once per change.
// One check serves every caller for readyCache, so unauthenticated callers cannot make
// the node ping its database or stat its disks faster.

const readyCache = time.Second

// minFreeDisk is the free space below which the data directory is not ready: less than
// a few writes of inline content and the database pages they need.
const minFreeDisk = 1 << 20

type readiness struct {
	mu      sync.Mutex
	at      time.Time
	reasons []string
}

// notReady names what keeps this node from serving now (nil: ready), as the lines of
// /readyz's answer: "unreachable: PART, PART" and "disk full: data directory" (or
// "read-only", "no free inodes", "unusable").
func (s *Service) notReady(ctx context.Context) []string {
	s.ready.mu.Lock()
	defer s.ready.mu.Unlock()
	if !s.ready.at.IsZero() && time.Since(s.ready.at) < readyCache {
		return s.ready.reasons
	}
	var down, reasons []string
	var causes []any
	pctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	err := s.meta.ping(pctx)
	cancel()
	if err != nil {
		down, causes = append(down, "metadata database"), append(causes, "metadata_err", err)
	}
	if s.br != nil {
		if open, cause := s.br.state(); open {
			down, causes = append(down, "blob store"), append(causes, "blob_err", cause)
		}
	}
	if len(down) > 0 {
		reasons = append(reasons, "unreachable: "+strings.Join(down, ", "))
	}
	if problem, cause := s.diskProblem(); problem != "" {
		reasons, causes = append(reasons, problem+": data directory"), append(causes, "disk", cause)
	}
	if !slices.Equal(reasons, s.ready.reasons) { // a line per change, not per check
		if len(reasons) > 0 {
			s.cfg.Logger.Warn("not ready: "+strings.Join(reasons, "; "), causes...)
		} else if !s.ready.at.IsZero() {
			s.cfg.Logger.Info("ready again")
		}
	}
	s.ready.at, s.ready.reasons = time.Now(), reasons
	return reasons
}

// diskDirs are the local directories a write needs: uploads in flight (tmp), and the
// database (bbolt) and the content (local blobs), which may be other mounts.
func (s *Service) diskDirs() []string {
	dirs := []string{s.tmpDir}
	if !s.meta.shared() {
		dirs = append(dirs, s.dir)
	}
	if d, ok := s.blobs.(diskBlobs); ok {
		dirs = append(dirs, d.dir)
	}
	return dirs
}

// diskProblem says why the data directory cannot take a write, from the file systems'
// statistics (statfs: no write, a few microseconds): less than minFreeDisk free to this
// process, no free inodes, mounted read-only (as ext4 remounts itself after an I/O
// error), or not there. The cause names the directory and what it has left.
func (s *Service) diskProblem() (string, string) {
	for _, dir := range s.diskDirs() {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return "unusable", err.Error()
		}
		free := uint64(st.Bavail) * uint64(st.Bsize)
		switch {
		case st.Flags&stRdonly != 0:
			return "read-only", dir + " is on a read-only file system"
		case free < minFreeDisk:
			return "disk full", fmt.Sprintf("%s: %d bytes free, below %d", filepath.Clean(dir), free, minFreeDisk)
		case st.Files > 0 && st.Ffree == 0:
			return "no free inodes", dir + ": no free inodes"
		}
	}
	return "", ""
}

// stRdonly is ST_RDONLY, the read-only flag of statfs (Linux).
const stRdonly = 1

func (s *Service) handleReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if reasons := s.notReady(r.Context()); len(reasons) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(strings.Join(reasons, "; ") + "\n"))
		return
	}
	w.Write([]byte("ready\n"))
}
