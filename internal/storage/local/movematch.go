package local

import (
	"context"
	"crypto/sha256"
	"fmt"
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
	src, err := b.path(srcDir, srcName)
	if err != nil {
		return err
	}
	dst, err := b.path(dstDir, dstName)
	if err != nil {
		return err
	}
	srcKey, dstKey := storage.Join(srcDir, srcName), storage.Join(dstDir, dstName)
	what := fmt.Sprintf("move %s to %s", srcKey, dstKey)
	unlock, err := b.lock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(srcKey, err))
	}
	defer unlock()
	same, err := hashIs(src, match)
	if err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(srcKey, err))
	}
	if !same {
		return fmt.Errorf("%s: %w", what, storage.ErrChanged)
	}
	return b.moveLocked(what, src, dst, srcKey, dstKey, dstDir)
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
