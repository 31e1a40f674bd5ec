package storeserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/storage"
)

// blobStore keeps content by hash. commit makes the temporary file at tmp durable as the
// blob hash (the caller removes tmp afterwards if it still exists); committing a blob that
// is already present is harmless, since equal hashes mean equal content; one present but
// damaged (its bytes no longer hash to its name) is replaced by the content committed.
type blobStore interface {
	commit(ctx context.Context, hash [32]byte, tmp string, size int64) error
	open(ctx context.Context, hash [32]byte) (io.ReadCloser, int64, error)
	remove(ctx context.Context, hash [32]byte) error
	list(ctx context.Context, fn func(hash [32]byte) error) error
}

// orphanBlobs lists the blobs in the store that known does not name: content without a
// metadata record, which garbage collection removes.
func orphanBlobs(ctx context.Context, blobs blobStore, known map[[32]byte]bool) ([][32]byte, error) {
	var orphans [][32]byte
	err := blobs.list(ctx, func(h [32]byte) error {
		if !known[h] {
			orphans = append(orphans, h)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	return orphans, nil
}

func hexName(h [32]byte) string { return hex.EncodeToString(h[:]) }

func parseHexName(s string) ([32]byte, bool) {
	var h [32]byte
	if len(s) != 64 {
		return h, false
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil || hex.EncodeToString(h[:]) != s {
		return h, false
	}
	return h, true
}

// diskBlobs stores blobs as files blobs/xx/<hex> in the data directory.
type diskBlobs struct{ dir string }

func (d diskBlobs) path(h [32]byte) string {
	n := hexName(h)
	return filepath.Join(d.dir, n[:2], n)
}

func (d diskBlobs) commit(_ context.Context, h [32]byte, tmp string, _ int64) error {
	p := d.path(h)
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("commit blob: %w", err)
	}
	return atomicfile.SyncDir(filepath.Dir(p))
}

func (d diskBlobs) open(_ context.Context, h [32]byte) (io.ReadCloser, int64, error) {
	f, err := os.Open(d.path(h))
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

func (d diskBlobs) remove(_ context.Context, h [32]byte) error {
	err := os.Remove(d.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (d diskBlobs) list(ctx context.Context, fn func([32]byte) error) error {
	for i := range 256 {
		ents, err := os.ReadDir(filepath.Join(d.dir, fmt.Sprintf("%02x", i)))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		for _, e := range ents {
			if h, ok := parseHexName(e.Name()); ok {
				if err := fn(h); err != nil {
					return err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// backendBlobs stores blobs in any storage.Backend (an S3 bucket for --blobs s3://...) as
// blobs/xx/<hex>.
type backendBlobs struct{ b storage.Backend }

func blobDir(n string) string { return "blobs/" + n[:2] }

func (s backendBlobs) commit(ctx context.Context, h [32]byte, tmp string, size int64) error {
	n := hexName(h)
	if i, err := s.b.Stat(ctx, blobDir(n), n); err == nil && i.Size == size && (!storage.Verify(ctx) || s.holds(ctx, h)) {
		return nil // already stored, write-once
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := s.b.Put(ctx, blobDir(n), n, f, size); err != nil {
		return fmt.Errorf("commit blob: %w", err)
	}
	return nil
}

// holds reports whether the blob stored as h hashes to h: asked only by a repair
// (storage.Verify, veil put --force), so that a blob damaged in the bucket (found by a
// user walkthrough: its file stayed broken after being put again) is replaced by the
// content just received, as the disk store's rename replaces it, while an ordinary
// duplicate costs one stat, not a read of the blob. Any doubt (unreadable) means no.
func (s backendBlobs) holds(ctx context.Context, h [32]byte) bool {
	n := hexName(h)
	rc, err := s.b.Get(ctx, blobDir(n), n)
	if err != nil {
		return false
	}
	defer rc.Close()
	d := sha256.New()
	if _, err := io.Copy(d, rc); err != nil {
		return false
	}
	return [32]byte(d.Sum(nil)) == h
}

func (s backendBlobs) open(ctx context.Context, h [32]byte) (io.ReadCloser, int64, error) {
	n := hexName(h)
	i, err := s.b.Stat(ctx, blobDir(n), n)
	if err != nil {
		return nil, 0, err
	}
	rc, err := s.b.Get(ctx, blobDir(n), n)
	return rc, i.Size, err
}

func (s backendBlobs) remove(ctx context.Context, h [32]byte) error {
	n := hexName(h)
	err := s.b.Delete(ctx, blobDir(n), n)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

func (s backendBlobs) list(ctx context.Context, fn func([32]byte) error) error {
	for i := range 256 {
		infos, err := s.b.List(ctx, fmt.Sprintf("blobs/%02x", i))
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, in := range infos {
			if h, ok := parseHexName(in.Name); ok && !in.IsDir {
				if err := fn(h); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
