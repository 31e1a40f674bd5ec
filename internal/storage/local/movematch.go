package local

import (
	"context"
	"crypto/sha256"
	"io"
	"os"

	"github.com/veil-project/veil/internal/storage"
)

var _ storage.MatchMover = (*Backend)(nil)

// MoveMatch is Move of a file whose content hashes (SHA-256) to match, checked and renamed
// under the commit lock (lock.go), so no Put, Delete or Move of this store can come
// between the check and the rename. The source is checked first (ErrNotFound), then its
// content (ErrChanged, also for a directory), then the destination (ErrExists).
func (b *Backend) MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error {
	return b.move(ctx, srcDir, srcName, dstDir, dstName, &match)
}

// hashIs reports whether p is a regular file whose content hashes to h.
func hashIs(p string, h [32]byte) (bool, error) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false, err
	}
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return false, err
	}
	return [32]byte(d.Sum(nil)) == h, nil
}
