package storeserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/storage"
)

// blobStore keeps content by hash and key (blobID). commit makes the temporary file at
// tmp durable as the blob (the caller removes tmp afterwards if it still exists);
// committing a blob that is already present is harmless, since equal hashes mean equal
// content; one present but damaged (its bytes no longer hash to its name) is replaced by
// the content committed.
type blobStore interface {
	commit(ctx context.Context, b blobID, tmp string, size int64) error
	open(ctx context.Context, b blobID) (io.ReadCloser, int64, error)
	remove(ctx context.Context, b blobID) error
	list(ctx context.Context, fn func(b blobID) error) error
}

// blobID names one stored copy of content: its SHA-256 and the key its record gave it.
// Key 0 is the name by hash alone (bbolt; PostgreSQL rows recorded before schema version
// 3). Otherwise the key is the generation of the PostgreSQL row that recorded it, so the
// copy stored for a row recorded anew (after gc or a refused upload removed the old one)
// never has the old copy's name: a removal of the old copy that lands late, after its
// claim ran out, cannot delete it (docs/design-store.md, "A late removal").
type blobID struct {
	h   [32]byte
	key int64
}

// orphanBlobs lists the blobs in the store for which known is false: content without a
// metadata record, which garbage collection removes.
func orphanBlobs(ctx context.Context, blobs blobStore, known func(blobID) bool) ([]blobID, error) {
	var orphans []blobID
	err := blobs.list(ctx, func(b blobID) error {
		if !known(b) {
			orphans = append(orphans, b)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	return orphans, nil
}

// openRecorded opens the copy a record names (b). With PostgreSQL, if b has a key and no
// copy is stored under it, it opens the copy named by the hash alone: a node of schema
// version 2 still running beside newer ones (pgMigrations) stores that copy whatever row
// it pins, and a keyed row whose own copy never arrived (the newer node's upload failed)
// is read from it. PostgreSQL's gc keeps such a copy while a row of the content exists
// (meta_pg_gc.go); bbolt's removes it as an orphan, so there a missing copy is reported,
// not masked. The caller verifies what it reads against the hash, as for any copy
// (TestPGOlderNodeUploadReadsOnNewer).
func (s *Service) openRecorded(ctx context.Context, b blobID) (io.ReadCloser, int64, error) {
	rc, n, err := s.blobs.open(ctx, b)
	if b.key != 0 && s.meta.shared() && (errors.Is(err, os.ErrNotExist) || errors.Is(err, storage.ErrNotFound)) {
		if rc2, n2, err2 := s.blobs.open(ctx, blobID{h: b.h}); err2 == nil {
			return rc2, n2, nil
		}
	}
	return rc, n, err
}

func hexName(h [32]byte) string { return hex.EncodeToString(h[:]) }

// blobObject is b's object name: the hash in hex, then, for a key other than 0, "-" and the
// key in 16 hex digits (docs/formats/store-records.md, "Blob objects").
func blobObject(b blobID) string {
	if b.key == 0 {
		return hexName(b.h)
	}
	return fmt.Sprintf("%s-%016x", hexName(b.h), uint64(b.key))
}

// parseBlobObject is blobObject's inverse; other names (temporary files, markers) are no blobs.
func parseBlobObject(s string) (blobID, bool) {
	var b blobID
	k, keyed := "", false
	if len(s) == 64+1+16 && s[64] == '-' {
		s, k, keyed = s[:64], s[65:], true
	}
	if len(s) != 64 {
		return b, false
	}
	if _, err := hex.Decode(b.h[:], []byte(s)); err != nil || hex.EncodeToString(b.h[:]) != s {
		return b, false
	}
	if keyed {
		key, err := strconv.ParseUint(k, 16, 64)
		if err != nil || key == 0 || key > math.MaxInt64 || fmt.Sprintf("%016x", key) != k {
			return b, false
		}
		b.key = int64(key)
	}
	return b, true
}

// diskBlobs stores blobs as files blobs/xx/<hex> in the data directory.
type diskBlobs struct{ dir string }

func (d diskBlobs) path(b blobID) string {
	n := blobObject(b)
	return filepath.Join(d.dir, n[:2], n)
}

func (d diskBlobs) commit(_ context.Context, b blobID, tmp string, _ int64) error {
	p := d.path(b)
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("commit blob: %w", err)
	}
	return atomicfile.SyncDir(filepath.Dir(p))
}

func (d diskBlobs) open(_ context.Context, b blobID) (io.ReadCloser, int64, error) {
	f, err := os.Open(d.path(b))
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

func (d diskBlobs) remove(_ context.Context, b blobID) error {
	err := os.Remove(d.path(b))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (d diskBlobs) list(ctx context.Context, fn func(blobID) error) error {
	for i := range 256 {
		ents, err := os.ReadDir(filepath.Join(d.dir, fmt.Sprintf("%02x", i)))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		for _, e := range ents {
			if b, ok := parseBlobObject(e.Name()); ok {
				if err := fn(b); err != nil {
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

func (s backendBlobs) commit(ctx context.Context, b blobID, tmp string, size int64) error {
	n := blobObject(b)
	if i, err := s.b.Stat(ctx, blobDir(n), n); err == nil && i.Size == size && (!storage.Verify(ctx) || s.holds(ctx, b)) {
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
func (s backendBlobs) holds(ctx context.Context, b blobID) bool {
	n := blobObject(b)
	rc, err := s.b.Get(ctx, blobDir(n), n)
	if err != nil {
		return false
	}
	defer rc.Close()
	d := sha256.New()
	if _, err := io.Copy(d, rc); err != nil {
		return false
	}
	return [32]byte(d.Sum(nil)) == b.h
}

func (s backendBlobs) open(ctx context.Context, b blobID) (io.ReadCloser, int64, error) {
	n := blobObject(b)
	i, err := s.b.Stat(ctx, blobDir(n), n)
	if err != nil {
		return nil, 0, err
	}
	rc, err := s.b.Get(ctx, blobDir(n), n)
	return rc, i.Size, err
}

func (s backendBlobs) remove(ctx context.Context, b blobID) error {
	n := blobObject(b)
	err := s.b.Delete(ctx, blobDir(n), n)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

func (s backendBlobs) list(ctx context.Context, fn func(blobID) error) error {
	for i := range 256 {
		infos, err := s.b.List(ctx, fmt.Sprintf("blobs/%02x", i))
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, in := range infos {
			if b, ok := parseBlobObject(in.Name); ok && !in.IsDir {
				if err := fn(b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
