package dupless

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"golang.org/x/sync/semaphore"
)

// putRun is what one Put shares across its files: directory listings, and the chunks it
// has stored, so a chunk that occurs in several files (copies, shared blocks) is derived,
// encrypted and sent once per run. This is the client's knowledge of its own uploads, not a
// question to the storage service.
type putRun struct {
	be    storage.Backend
	sum   *Summary
	dirs  *dirCache
	cache *runCache           // the put cache (nil: none)
	sem   chan struct{}       // chunk uploads in flight for the whole run
	bytes *semaphore.Weighted // ciphertext bytes held by queued and running uploads
	// putObj stores a chunk object (the Client's putObject: batched where the service can).
	putObj func(ctx context.Context, dir, name string, data []byte) error
	// batched reports whether putObj sends an object of n bytes in a batch, whose queue
	// bounds the requests in flight: such uploads take no sem slot.
	batched func(n int) bool

	commits   chan struct{} // files whose uploads and record are being finished
	commitsWG sync.WaitGroup

	held *heldUploads // a lone small file's chunks, sent with its record (nil: no folding)

	encDirs sync.Map // destination directory -> its encrypted path (encFile)
	// lockless: the run holds no lock (putlockless.go); its file commits in one batch with
	// its root and the prune marker's absence, or not at all (needLock then).
	lockless bool
	conds    []storage.Object // lockless: what its answers from the root assumed (loneFromRoot)
	needLock atomic.Bool

	mu      sync.Mutex
	byHash  map[mle.Digest]chunkRef // chunks stored (or being stored) in this run, by H(M)
	uploads map[mle.Tag]*upload     // by chunk tag
	keys    map[mle.Digest]*keyFuture
}

// keyFuture is a key being derived by one file of the run (its owner) for all of them.
// The owner also encrypts and stores the chunk; stored is closed once it has (or gave up),
// so the other files reuse its chunk instead of encrypting the same bytes again.
type keyFuture struct {
	done   chan struct{}
	key    mle.Key
	err    error
	stored chan struct{}
	once   sync.Once
}

// markStored says the owner stored the chunk, or will not: waiters may look it up now.
func (f *keyFuture) markStored() { f.once.Do(func() { close(f.stored) }) }

// claim splits digests into those this caller must derive (and later resolve) and the
// futures of all of them, so each digest is sent to the key server once per run.
func (r *putRun) claim(ds []mle.Digest) (mine []mle.Digest, all map[mle.Digest]*keyFuture) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all = make(map[mle.Digest]*keyFuture, len(ds))
	for _, d := range ds {
		if f, ok := r.keys[d]; ok {
			all[d] = f
			continue
		}
		f := &keyFuture{done: make(chan struct{}), stored: make(chan struct{})}
		r.keys[d] = f
		all[d] = f
		mine = append(mine, d)
	}
	return mine, all
}

// resolve completes the futures of mine with keys, or err. Failed futures are forgotten,
// so a later file of the run asks the key server again.
func (r *putRun) resolve(mine []mle.Digest, all map[mle.Digest]*keyFuture, keys []mle.Key, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, d := range mine {
		f := all[d]
		if err != nil {
			f.err = err
			delete(r.keys, d)
			f.markStored()
		} else {
			f.key = keys[i]
		}
		close(f.done)
	}
}

// pending is a chunk a record may use, with the upload it must wait for (nil: stored before).
type pending struct {
	ref chunkRef
	up  *upload
}

// upload is one chunk object being sent; wait returns its outcome. A failed upload keeps
// its ciphertext so that the files waiting for it can send it again (retry).
type upload struct {
	done chan struct{}
	err  error
	ref  chunkRef
	ct   []byte // nil once stored
}

func (u *upload) wait() error {
	<-u.done
	return u.err
}

// Limits of one run: chunk uploads in flight, each its own request (batched ones are
// bounded by the batch queue's requests instead), ciphertext bytes waiting for upload
// (memory), and files or directories being committed (waiting for their uploads, then
// writing their record) while the workers go on with the next files. Many commits: a
// small file's commit waits two batch round trips (its chunk, then its record), and the
// batches are only as large as what waits for them.
const (
	maxUploads     = 32
	maxUploadBytes = 256 << 20
	maxCommits     = 1024
)

// commit finishes a file in the background: fn waits for its uploads and writes its
// record. It blocks while maxCommits files are already being finished.
func (r *putRun) commit(fn func()) {
	r.commits <- struct{}{}
	r.commitsWG.Add(1)
	go func() {
		defer func() { <-r.commits; r.commitsWG.Done() }()
		fn()
	}()
}

// waitCommits blocks until every file handed to commit is finished.
func (r *putRun) waitCommits() { r.commitsWG.Wait() }

func newPutRun(be storage.Backend, sum *Summary) *putRun {
	return &putRun{be: be, sum: sum, dirs: &dirCache{m: map[string]*dirEntries{}},
		sem: make(chan struct{}, maxUploads), bytes: semaphore.NewWeighted(maxUploadBytes),
		commits: make(chan struct{}, maxCommits), byHash: map[mle.Digest]chunkRef{}, uploads: map[mle.Tag]*upload{},
		keys: map[mle.Digest]*keyFuture{},
		putObj: func(ctx context.Context, dir, name string, data []byte) error {
			return be.Put(ctx, dir, name, bytesReader(data), int64(len(data)))
		}, batched: func(int) bool { return false }}
}

// lookup returns a chunk of this run with the same message, and the upload a record that
// uses it must wait for. Fallback chunks (random keys) are not shared: each file retries
// the key server.
func (r *putRun) lookup(p piece) (pending, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, ok := r.byHash[p.digest]
	if !ok || ref.Flags&flagCompressed != p.flags&flagCompressed {
		return pending{}, false
	}
	return pending{ref, r.uploads[ref.Tag]}, true
}

// wait blocks until every upload of the run has finished.
func (r *putRun) wait() {
	r.mu.Lock()
	ups := make([]*upload, 0, len(r.uploads))
	for _, u := range r.uploads {
		ups = append(ups, u)
	}
	r.mu.Unlock()
	for _, u := range ups {
		u.wait()
	}
}

// notADir refuses to store a file or symlink where the storage holds a directory.
func (r *putRun) notADir(ctx context.Context, be storage.Backend, encDir, encName, dest string) error {
	isDir, err := r.dirs.has(ctx, be, encDir, encName)
	if err != nil {
		return err
	}
	if isDir {
		return fmt.Errorf("%s is stored as a directory: 'veil rm -r' it before storing a file there", dest)
	}
	return nil
}

// store sends a chunk object unless this run already sends or sent it, and returns the
// upload to wait for.
//
// It reports whether it started a new upload (false: the run already sends this chunk).
func (r *putRun) store(ctx context.Context, ref chunkRef, ct []byte) (*upload, bool) {
	r.mu.Lock()
	if u, ok := r.uploads[ref.Tag]; ok {
		r.mu.Unlock()
		return u, false
	}
	u := &upload{done: make(chan struct{}), ref: ref, ct: ct}
	r.uploads[ref.Tag] = u
	if ref.Flags&flagRandomKey == 0 {
		r.byHash[ref.Digest] = ref
	}
	f := r.keys[ref.Digest]
	r.mu.Unlock()
	if f != nil && ref.Flags&flagRandomKey == 0 { // a fallback chunk is nobody's to share
		f.markStored()
	}
	n := min(int64(len(ct)), maxUploadBytes)
	if err := r.bytes.Acquire(ctx, n); err != nil { // memory bound: wait for uploads to drain
		u.err = err
		r.forget(ref, u)
		close(u.done)
		return u, true
	}
	dir, name := chunkLocation(ref.Tag)
	if r.hold(heldUpload{ctx: ctx, u: u, dir: dir, name: name, n: n}) {
		return u, true // sent with the file's record (putfold.go)
	}
	if r.lockless {
		r.needLock.Store(true) // a chunk outside the record's batch: only under the lock
	}
	go r.send(ctx, u, dir, name, n)
	return u, true
}

// send uploads u's chunk (the caller goes on chunking the next batch while this waits
// its turn) and then closes u.done, releasing its n bytes.
func (r *putRun) send(ctx context.Context, u *upload, dir, name string, n int64) {
	ref, ct := u.ref, u.ct
	slot := !r.batched(len(ct))
	if slot {
		r.sem <- struct{}{}
	}
	defer func() {
		if slot {
			<-r.sem
		}
		r.bytes.Release(n)
		close(u.done)
	}()
	// An upload that waited for its slot while the run was stopped (the service found
	// full or down, or the command interrupted) is not sent: retry always makes one try.
	err := ctx.Err()
	if err == nil {
		err = retry(ctx, func() error { return r.putObj(ctx, dir, name, ct) })
	}
	if err != nil {
		u.err = fmt.Errorf("upload chunk: %w", err)
		if r.sum.stop != nil && r.sum.shouldHalt(err) {
			r.sum.halt(u.err) // no later upload can succeed: stop the run now
		}
		r.forget(ref, u)
		return
	}
	u.ct = nil
	r.sum.reachable()
	r.sum.add(func(s *Summary) { s.BytesUploaded += int64(len(ct)) }) // the chunk: counted by its file (commitFile)
}

// await waits for an upload a record depends on. If it failed on a transient error, the
// chunk is sent again (shared with the other files waiting for it), so one bad moment of
// the network fails no file.
func (r *putRun) await(ctx context.Context, u *upload) error {
	err := u.wait()
	if err == nil || u.ct == nil || !transient(ctx, err) {
		return err
	}
	again, _ := r.store(ctx, u.ref, u.ct)
	return again.wait()
}

// awaitAll waits for the uploads a record depends on (await, in order).
func (r *putRun) awaitAll(ctx context.Context, ups []*upload) error {
	for _, u := range ups {
		if err := r.await(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// forget drops a failed upload, so that later files of the run store the chunk again
// instead of all failing on one transient error. Files that already hold it still fail.
func (r *putRun) forget(ref chunkRef, u *upload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.uploads[ref.Tag] == u {
		delete(r.uploads, ref.Tag)
	}
	if cur, ok := r.byHash[ref.Digest]; ok && cur.Tag == ref.Tag {
		delete(r.byHash, ref.Digest)
	}
}

// dirCache lists each destination directory once per run, so storing a new file costs no
// request to look for a previous version.
type dirCache struct {
	mu sync.Mutex
	m  map[string]*dirEntries
	// byStat: look names up one by one instead of listing their directory (a lone put:
	// its one file needs two names, and a listing grows with the directory).
	byStat bool
}

type dirEntries struct {
	mu    sync.Mutex
	names map[string]bool // nil until listed successfully
	known map[string]bool // byStat: the names looked up so far
}

func (d *dirCache) has(ctx context.Context, be storage.Backend, dir, name string) (bool, error) {
	d.mu.Lock()
	e := d.m[dir]
	if e == nil {
		e = &dirEntries{}
		d.m[dir] = e
	}
	d.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if d.byStat {
		return e.stat(ctx, be, dir, name)
	}
	if e.names == nil { // a failed listing is retried by the next file, not cached
		infos, err := be.List(ctx, dir)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return false, err
		}
		e.names = make(map[string]bool, len(infos))
		for _, i := range infos {
			e.names[i.Name] = true
		}
	}
	return e.names[name], nil
}

// stat looks name up in dir (byStat), with its record name (name + keySuffix) or its
// plain name alongside, in parallel: a file's put asks for both, in one round trip.
func (e *dirEntries) stat(ctx context.Context, be storage.Backend, dir, name string) (bool, error) {
	if v, ok := e.known[name]; ok {
		return v, nil
	}
	other := name + keySuffix
	if base, ok := strings.CutSuffix(name, keySuffix); ok {
		other = base
	}
	names := []string{name, other}
	var found [2]bool
	var errs [2]error
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := be.Stat(ctx, dir, n)
			found[i], errs[i] = err == nil, err
			if errors.Is(err, storage.ErrNotFound) {
				errs[i] = nil
			}
		}()
	}
	wg.Wait()
	if e.known == nil {
		e.known = map[string]bool{}
	}
	for i, n := range names {
		if errs[i] == nil { // a failed look-up is retried, not cached
			e.known[n] = found[i]
		}
	}
	return found[0], errs[0]
}

// absentIn notes that directory dir (name in parent) did not exist when this run listed
// parent, so it holds nothing yet: neither its record nor a file of it needs a listing.
// A new tree is stored without one List per directory.
func (d *dirCache) absentIn(parent, name, dir string) {
	d.mu.Lock()
	pe := d.m[parent]
	d.mu.Unlock()
	if pe == nil {
		return
	}
	pe.mu.Lock()
	absent := pe.names != nil && !pe.names[name]
	pe.mu.Unlock()
	if !absent {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m[dir] == nil {
		d.m[dir] = &dirEntries{names: map[string]bool{}}
	}
}

// encFile is Client.encFile with the run's encrypted directories remembered: the files of a
// tree share few directories, and encrypting every component of a deep path again for each
// file (AES-SIV, ~3 us per component) cost more than its name.
func (r *putRun) encFile(c *Client, dest string) (encDir, encName string, err error) {
	if dest == "" {
		return "", "", errors.New("a file needs a name")
	}
	dir, name := storage.Split(dest)
	if e, ok := r.encDirs.Load(dir); ok {
		encDir = e.(string)
	} else if encDir, err = c.keys.encPath(dir); err != nil {
		return "", "", err
	} else {
		r.encDirs.Store(dir, encDir)
	}
	encName, err = c.keys.encName(name)
	return encDir, encName, err
}
