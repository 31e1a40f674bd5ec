package dupless

import (
	"context"
	"sync"

	"github.com/veil-project/veil/internal/storage"
)

// Folding a lone small file into one request. A 'veil put' of one small file would send
// its chunk in one batch and then, once that is acknowledged, its key record in another
// (the record is the commit point: it must never be visible before its content). On a
// service with atomic batch uploads (storage.BatchPutter) the chunk and the record can go
// in ONE batch instead: all of it becomes visible or none, so the record still never
// points to missing content, with one round trip and one commit less. Each chunk is still
// its own object under its own name and key (deduplicated by the service as before); only
// the transport is shared. On any failure the held chunks are sent the usual way and the
// record follows them as before.

// foldMaxFile bounds the files folded: their chunks' ciphertexts all fit one batch object
// (storage.BatchMaxObjectSize) with room for the record.
const foldMaxFile = 32 << 10

// heldUploads are the chunk uploads of a lone small file, held back to go with its record.
type heldUploads struct {
	mu     sync.Mutex
	items  []heldUpload
	closed bool // taken or released: later uploads are sent as usual
}

type heldUpload struct {
	ctx       context.Context
	u         *upload
	dir, name string
	n         int64 // bytes of r.bytes to release
}

// foldable reports whether a put of tasks is one small regular file to a service that
// takes atomic batch uploads.
func (c *Client) foldable(tasks []putTask) bool {
	if c.batch == nil || c.batch.disabled() || len(tasks) != 1 {
		return false
	}
	fi := tasks[0].info
	return fi.Mode().IsRegular() && fi.Size() <= foldMaxFile
}

// hold keeps an upload back for the file's record, if the run folds and it still may.
func (r *putRun) hold(h heldUpload) bool {
	if r.held == nil || len(h.u.ct) > storage.BatchMaxObjectSize {
		return false
	}
	r.held.mu.Lock()
	defer r.held.mu.Unlock()
	if r.held.closed {
		return false
	}
	r.held.items = append(r.held.items, h)
	return true
}

// takeHeld returns the held uploads and stops holding.
func (r *putRun) takeHeld() []heldUpload {
	if r.held == nil {
		return nil
	}
	r.held.mu.Lock()
	defer r.held.mu.Unlock()
	out := r.held.items
	r.held.items, r.held.closed = nil, true
	return out
}

// releaseHeld sends the held uploads the usual way (the file will not commit with them).
func (r *putRun) releaseHeld() { r.finishHeld(r.takeHeld(), false) }

// finishHeld ends held uploads: stored with the record, or else sent as usual.
func (r *putRun) finishHeld(held []heldUpload, stored bool) {
	for _, h := range held {
		if !stored {
			go r.send(h.ctx, h.u, h.dir, h.name, h.n)
			continue
		}
		size := int64(len(h.u.ct))
		h.u.ct = nil
		r.sum.add(func(s *Summary) { s.BytesUploaded += size }) // the chunk: counted by its file (commitFile)
		r.bytes.Release(h.n)
		close(h.u.done)
	}
}

// heldObjects are the held uploads as batch objects.
func heldObjects(held []heldUpload) []storage.Object {
	objs := make([]storage.Object, len(held))
	for i, h := range held {
		objs[i] = storage.Object{Dir: h.dir, Name: h.name, Data: h.u.ct}
	}
	return objs
}
