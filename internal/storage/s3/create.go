package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/veil-project/veil/internal/storage"
)

var _ storage.Creator = (*Backend)(nil)

// What the server was found to do with If-None-Match: * on a PUT (Backend.creates).
const (
	createsUnknown = iota // not probed yet, or the probe had no answer
	createsHonoured
	createsIgnored // stored the second create, or refused the condition
)

// errNoCreates is every PutNew on a server that does not honour If-None-Match: one
// sentence of its own (storage.ErrNoConditions's text after it did not read as one),
// and storage.ErrNoConditions to errors.Is.
var errNoCreates error = noCreates{}

type noCreates struct{}

func (noCreates) Error() string {
	return "the S3 server does not honour If-None-Match on PUT, so it cannot create an object only where none exists"
}

func (noCreates) Unwrap() error { return storage.ErrNoConditions }

// maxSinglePut is the largest object S3 takes in one PUT. A create is always one PUT:
// minio-go sends a multipart upload's conditions with its initiation, not its completion,
// where the server would check them.
const maxSinglePut = 5 << 30

// PutNew uploads r as dir/name only if no object has that name (storage.Creator): one PUT
// with If-None-Match: *, which the server checks and commits as one step; its 412 is
// storage.ErrExists. Whether the server honours the condition is learnt at the first
// PutNew and kept for the Backend's life (learnCreates). One PUT holds at most 5 GiB; a
// body of unknown size is read into memory first, up to PartSize; larger is
// storage.ErrTooLarge.
func (b *Backend) PutNew(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if err := checkPath(dir, name); err != nil {
		return err
	}
	p := storage.Join(dir, name)
	if d, err := b.isDir(ctx, p); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	} else if d {
		return fmt.Errorf("create %s: %w", p, storage.ErrIsDir)
	}
	if err := b.checkParents(ctx, dir); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	if err := b.learnCreates(ctx, dir); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	r = storage.ExactReader(ctx, r, size)
	if size < 0 {
		data, err := io.ReadAll(io.LimitReader(r, int64(b.part)+1))
		if err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		if len(data) > int(b.part) {
			return fmt.Errorf("create %s: a body of unknown size over %d bytes: %w", p, b.part, storage.ErrTooLarge)
		}
		r, size = bytes.NewReader(data), int64(len(data))
	}
	if size > maxSinglePut {
		return fmt.Errorf("create %s: %d bytes, one PUT takes %d: %w", p, size, int64(maxSinglePut), storage.ErrTooLarge)
	}
	if err := b.putIfAbsent(ctx, b.key(p), r, size); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	if err := b.ensureDirs(ctx, dir); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}

// putIfAbsent is the conditional PUT of key: storage.ErrExists when the server answers
// that the key exists (412 Precondition Failed).
func (b *Backend) putIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true}
	opts.SetMatchETagExcept("*")
	_, err := b.c.PutObject(ctx, b.bucket, key, r, size, opts)
	if e := minio.ToErrorResponse(err); err != nil && (e.StatusCode == http.StatusPreconditionFailed || e.Code == "PreconditionFailed") {
		return fmt.Errorf("%w (%s)", storage.ErrExists, e.Code)
	}
	return err
}

// learnCreates returns nil if the server honours If-None-Match, errNoCreates if it does
// not. The first call asks it (probeCreates); the answer is kept, a failed probe is not.
func (b *Backend) learnCreates(ctx context.Context, dir string) error {
	b.createMu.Lock()
	defer b.createMu.Unlock()
	if b.creates == createsUnknown {
		c, err := b.probeCreates(ctx, dir)
		if err != nil {
			return fmt.Errorf("asking the server whether it honours conditional puts: %w", err)
		}
		b.creates = c
	}
	if b.creates == createsIgnored {
		return errNoCreates
	}
	return nil
}

// probeCreates creates dir/tmp-probe-<hex> twice: a server that honours If-None-Match
// refuses the second (412); one that ignores it stores it again, and one that refuses the
// condition itself (an older server or a gateway: conditionRefused) answers so at once.
// The probe object is deleted (a crash may leave it: storage.Creator's "tmp-" names).
func (b *Backend) probeCreates(ctx context.Context, dir string) (int, error) {
	var id [8]byte
	rand.Read(id[:])
	key := b.key(storage.Join(dir, "tmp-probe-"+hex.EncodeToString(id[:])))
	put := func() error { return b.putIfAbsent(ctx, key, strings.NewReader("probe"), 5) }
	err := put()
	if err == nil {
		defer b.c.RemoveObject(context.WithoutCancel(ctx), b.bucket, key, minio.RemoveObjectOptions{})
		err = put()
		if errors.Is(err, storage.ErrExists) {
			return createsHonoured, nil
		}
	}
	switch {
	case err == nil, errors.Is(err, storage.ErrExists), conditionRefused(err):
		return createsIgnored, nil
	}
	return createsUnknown, err
}

// conditionRefused reports an error answer to a conditional PUT that a retry would get
// again: a 4xx or a 501 (a server without conditional puts refuses the header with 400 or
// 501; a gateway that drops it breaks the request's signature, 403). 408, 409 (AWS: a
// conflicting conditional write in progress) and 429 may pass, as a 5xx or no answer may.
func conditionRefused(err error) bool {
	switch st := minio.ToErrorResponse(err).StatusCode; st {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return false
	default:
		return st >= 400 && st < 500 || st == http.StatusNotImplemented
	}
}
