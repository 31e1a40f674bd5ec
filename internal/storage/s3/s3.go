package s3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/veil-project/veil/internal/storage"
)

// Config says where the bucket is and how to authenticate.
type Config struct {
	Endpoint     string // host:port
	Bucket       string
	Prefix       string // optional key prefix ("veil/"); a trailing '/' is added if missing
	AccessKey    string
	SecretKey    string
	Region       string // default us-east-1
	TLS          bool   // https (system roots)
	CreateBucket bool   // make the bucket if it does not exist
	PartSize     uint64 // multipart part size for uploads of unknown length (default 16 MiB)
}

// Backend stores objects in one bucket.
type Backend struct {
	c      *minio.Client
	bucket string
	prefix string
	part   uint64
	dirs   sync.Map // directory paths known to have a marker (this process wrote or saw it)

	createMu sync.Mutex // held while learning creates
	creates  int        // createsUnknown, createsHonoured or createsIgnored (create.go)
}

var _ storage.Backend = (*Backend)(nil)

// New connects to the bucket, checking that it exists (or making it with CreateBucket).
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("s3: endpoint and bucket are required")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = 16 << 20
	}
	tr := &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second,
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		WriteBufferSize: 256 << 10, ReadBufferSize: 256 << 10,
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Secure: cfg.TLS,
		Region: cfg.Region, Transport: tr, BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		if !cfg.CreateBucket {
			return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, storage.ErrNotFound)
		}
		if err := c.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			return nil, fmt.Errorf("s3: make bucket %s: %w", cfg.Bucket, err)
		}
	}
	p := strings.Trim(cfg.Prefix, "/")
	if p != "" {
		p += "/"
	}
	return &Backend{c: c, bucket: cfg.Bucket, prefix: p, part: cfg.PartSize}, nil
}

func (b *Backend) key(path string) string    { return b.prefix + path }
func (b *Backend) marker(path string) string { return b.prefix + path + "/" }

func notFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey" || r.Code == "NotFound"
}

// file stats the object at path; ok is false if there is none.
func (b *Backend) file(ctx context.Context, path string) (minio.ObjectInfo, bool, error) {
	oi, err := b.c.StatObject(ctx, b.bucket, b.key(path), minio.StatObjectOptions{})
	if err != nil {
		if notFound(err) {
			return oi, false, nil
		}
		return oi, false, err
	}
	return oi, true, nil
}

// isDir reports whether path is a directory: a marker, or any key below it.
func (b *Backend) isDir(ctx context.Context, path string) (bool, error) {
	if path == "" {
		return true, nil
	}
	if _, ok := b.dirs.Load(path); ok {
		return true, nil
	}
	ch, stop := b.list(ctx, minio.ListObjectsOptions{Prefix: b.marker(path), MaxKeys: 1})
	defer stop()
	oi, ok := <-ch
	switch {
	case !ok:
		return false, nil
	case oi.Err != nil && notFound(oi.Err):
		return false, nil
	case oi.Err != nil:
		return false, oi.Err
	}
	return true, nil
}

// ensureDirs writes the missing markers of dir and its parents; a file in the way is
// ErrNotDir.
func (b *Backend) ensureDirs(ctx context.Context, dir string) error {
	return b.walkDirs(ctx, dir, true)
}

// checkParents fails with ErrNotDir if a component of dir is a file.
func (b *Backend) checkParents(ctx context.Context, dir string) error {
	return b.walkDirs(ctx, dir, false)
}

func (b *Backend) walkDirs(ctx context.Context, dir string, write bool) error {
	if dir == "" {
		return nil
	}
	cur := ""
	for _, c := range strings.Split(dir, "/") {
		cur = storage.Join(cur, c)
		if _, ok := b.dirs.Load(cur); ok {
			continue
		}
		if _, ok, err := b.file(ctx, cur); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%q is a file: %w", cur, storage.ErrNotDir)
		}
		if !write {
			continue
		}
		if _, err := b.c.PutObject(ctx, b.bucket, b.marker(cur), strings.NewReader(""), 0, minio.PutObjectOptions{}); err != nil {
			return fmt.Errorf("directory marker %q: %w", cur, err)
		}
		b.dirs.Store(cur, struct{}{})
	}
	return nil
}

// Put uploads r as one object (multipart of PartSize parts when size is unknown or large).
func (b *Backend) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if err := checkPath(dir, name); err != nil {
		return err
	}
	p := storage.Join(dir, name)
	if d, err := b.isDir(ctx, p); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	} else if d {
		return fmt.Errorf("put %s: %w", p, storage.ErrIsDir)
	}
	if err := b.checkParents(ctx, dir); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	opts := minio.PutObjectOptions{PartSize: b.part, ContentType: "application/octet-stream"}
	if _, err := b.c.PutObject(ctx, b.bucket, b.key(p), storage.ExactReader(ctx, r, size), size, opts); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	if err := b.ensureDirs(ctx, dir); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	return nil
}

// Get streams the object.
func (b *Backend) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if err := checkPath(dir, name); err != nil {
		return nil, err
	}
	p := storage.Join(dir, name)
	obj, err := b.c.GetObject(ctx, b.bucket, b.key(p), minio.GetObjectOptions{})
	if err == nil {
		_, err = obj.Stat()
	}
	if err != nil {
		if obj != nil {
			obj.Close()
		}
		if notFound(err) {
			if d, _ := b.isDir(ctx, p); d {
				return nil, fmt.Errorf("get %s: %w", p, storage.ErrIsDir)
			}
			return nil, fmt.Errorf("get %s: %w", p, storage.ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", p, err)
	}
	return obj, nil
}

// Stat describes a file or a directory.
func (b *Backend) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	if err := checkPath(dir, name); err != nil {
		return storage.Info{}, err
	}
	p := storage.Join(dir, name)
	oi, ok, err := b.file(ctx, p)
	if err != nil {
		return storage.Info{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if ok {
		return storage.Info{Dir: dir, Name: name, Size: oi.Size, ModTime: oi.LastModified}, nil
	}
	if d, err := b.isDir(ctx, p); err != nil {
		return storage.Info{}, fmt.Errorf("stat %s: %w", p, err)
	} else if d {
		return storage.Info{Dir: dir, Name: name, IsDir: true}, nil
	}
	return storage.Info{}, fmt.Errorf("stat %s: %w", p, storage.ErrNotFound)
}

// checkDir is storage.CheckDir plus S3's own rule: keys are UTF-8, so a path that is not
// is storage.ErrInvalidName here, not an S3 client error a caller would take for a
// transient failure and retry.
func checkDir(dir string) error {
	if err := storage.CheckDir(dir); err != nil {
		return err
	}
	if !utf8.ValidString(dir) {
		return fmt.Errorf("%w: directory %q is not valid UTF-8 (S3 keys must be)", storage.ErrInvalidName, dir)
	}
	return nil
}

// checkPath is storage.CheckPath with checkDir's UTF-8 rule.
func checkPath(dir, name string) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	if err := storage.CheckName(name); err != nil {
		return err
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: %q is not valid UTF-8 (S3 keys must be)", storage.ErrInvalidName, name)
	}
	return nil
}
