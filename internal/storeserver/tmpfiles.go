package storeserver

import (
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
)

// An upload's temporary file (DIR/tmp/up-*) is locked (flock) by the upload for as long as
// it needs the file, so a sweep (gc, fsck) tells a live upload's file from one a crash
// left, whichever process runs it: `veil store gc --dir DIR` beside a node serving DIR (a
// PostgreSQL store) sees the node's uploads as live. A crashed process's locks are gone
// with it.

// createUpload creates a fresh temporary file in dir and locks it.
func createUpload(dir string) (*os.File, error) { return atomicfile.CreateLocked(dir, "up-*") }

// staleUploads are the files in dir no upload holds.
func staleUploads(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if p := filepath.Join(dir, e.Name()); atomicfile.ClaimStale(p, false) {
			out = append(out, p)
		}
	}
	return out, nil
}
