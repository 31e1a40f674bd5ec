package dupless

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// putRun is what one Put shares across its files: directory listings, and the chunks it
// has stored, so a chunk that occurs in several files (copies, shared blocks) is derived,
// encrypted and sent once per run. This is the client's knowledge of its own uploads, not a
// question to the storage service.
type putRun struct {
	be   storage.Backend
	sum  *Summary
	dirs *dirCache
	sem  chan struct{} // chunk uploads in flight for the whole run

	mu      sync.Mutex
	byHash  map[mle.Digest]chunkRef // chunks stored (or being stored) in this run, by H(M)
	uploads map[[32]byte]*upload    // by ciphertext hash
}

// upload is one chunk object being sent; wait returns its outcome.
type upload struct {
	done chan struct{}
	err  error
}

func (u *upload) wait() error {
	<-u.done
	return u.err
}

// maxUploads bounds the chunk uploads in flight in one run.
const maxUploads = 8

func newPutRun(be storage.Backend, sum *Summary) *putRun {
	return &putRun{be: be, sum: sum, dirs: &dirCache{m: map[string]*dirEntries{}},
		sem: make(chan struct{}, maxUploads), byHash: map[mle.Digest]chunkRef{}, uploads: map[[32]byte]*upload{}}
}

// lookup returns a chunk of this run with the same message, and the upload a record that
// uses it must wait for. Fallback chunks (random keys) are not shared: each file retries
// the key server.
func (r *putRun) lookup(p piece) (chunkRef, *upload, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, ok := r.byHash[p.digest]
	if !ok || ref.Flags&flagCompressed != p.flags&flagCompressed {
		return chunkRef{}, nil, false
	}
	return ref, r.uploads[ref.CtHash], true
}

// store sends a chunk object unless this run already sends or sent it, and returns the
// upload to wait for.
func (r *putRun) store(ctx context.Context, ref chunkRef, ct []byte) *upload {
	r.mu.Lock()
	if u, ok := r.uploads[ref.CtHash]; ok {
		r.mu.Unlock()
		r.sum.add(func(s *Summary) { s.ChunksKept++ })
		return u
	}
	u := &upload{done: make(chan struct{})}
	r.uploads[ref.CtHash] = u
	if ref.Flags&flagRandomKey == 0 {
		r.byHash[ref.Digest] = ref
	}
	r.mu.Unlock()
	r.sem <- struct{}{}
	go func() {
		defer func() { <-r.sem; close(u.done) }()
		dir, name := chunkLocation(ref.CtHash)
		if err := r.be.Put(ctx, dir, name, bytesReader(ct), int64(len(ct))); err != nil {
			u.err = fmt.Errorf("upload chunk: %w", err)
			return
		}
		r.sum.add(func(s *Summary) { s.ChunksUploaded++; s.BytesUploaded += int64(len(ct)) })
	}()
	return u
}

// dirCache lists each destination directory once per run, so storing a new file costs no
// request to look for a previous version.
type dirCache struct {
	mu sync.Mutex
	m  map[string]*dirEntries
}

type dirEntries struct {
	once  sync.Once
	names map[string]bool
	err   error
}

func (d *dirCache) has(ctx context.Context, be storage.Backend, dir, name string) (bool, error) {
	d.mu.Lock()
	e := d.m[dir]
	if e == nil {
		e = &dirEntries{}
		d.m[dir] = e
	}
	d.mu.Unlock()
	e.once.Do(func() {
		infos, err := be.List(ctx, dir)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			e.err = err
			return
		}
		e.names = make(map[string]bool, len(infos))
		for _, i := range infos {
			e.names[i.Name] = true
		}
	})
	return e.names[name], e.err
}
