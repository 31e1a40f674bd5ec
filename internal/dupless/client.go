package dupless

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// Options configure a Client. The zero value works: no key server (random keys, no dedup),
// HCE2 over the default suite, compression on, 16 parallel transfers.
type Options struct {
	Keys       mle.KeyDeriver // the key server client; nil stores under random keys
	Jobs       int            // files transferred in parallel (default DefaultJobs(); at most 2 x cores of them over 1 MiB)
	NoCompress bool           // skip zstd
	Force      bool           // put reads every file, even those whose size, mtime and mode match what is stored, and sends every chunk again
	Exclude    []string       // put skips entries whose name, or path below a PATH argument, matches (filepath.Match)
	Scheme     mle.Scheme     // default HCE2 (deterministic, guarded)
	Suite      mle.Suite      // default: by message size, mle.SuiteFor
	Events     Events         // progress callbacks (may be left empty)
	Logger     *slog.Logger   // default: discard
	Roots      RootMemory     // the newest tree root this device has seen (default: this Client's lifetime only)
	Cache      *PutCache      // put's local cache of what is stored (nil: none; records are read to skip unchanged files)
	RootCheck  RootCheck      // what reads do when the tree root does not vouch for a record (default: fail)
	Overwrite  Overwrite      // what get does with existing files at the destination (default: replace them)
	GetInclude []string       // get restores only entries matching (name or path below SRC), or below a matching directory
	GetExclude []string       // get skips entries matching (name or path below SRC), and everything below them
}

// Events are progress callbacks; any may be nil. They are called from several goroutines.
type Events struct {
	Total func(files int, bytes int64) // once, after the sources were scanned (put)
	Bytes func(n int64)                // plaintext bytes processed
	File  func(path string, err error) // a file, directory or link is done
	// Phase reports time spent in one step of storing a file: "chunk" (read, chunk,
	// compress, hash), "keys" (key server round trip), "encrypt", "upload" (chunk objects),
	// "record" (the key record), and per run "lock" and "unlock" (the namespace lock). For
	// benchmarks (the paper's Fig. 5).
	Phase func(phase string, d time.Duration)
}

// Client stores and retrieves files for one user on one storage service.
type Client struct {
	be     storage.Backend
	keys   *userKeys
	ks     *keySource
	suites map[mle.Suite]*mle.MLE
	opts   Options
	log    *slog.Logger

	large chan struct{} // transfers of files over largeFile in progress

	ownerOnce sync.Once
	ownerErr  error

	batch *batchQueue // small objects in batch uploads (nil: the backend has none)

	mem         RootMemory
	view        treeView
	keyChecked  atomic.Bool                   // the key check opened under this key
	noCondBatch atomic.Bool                   // the service refused a conditional batch (older than batch version 2)
	noAbsent    atomic.Bool                   // the service refused an absent condition (older than batch version 3)
	noLarge     atomic.Bool                   // the service refused a batch object over 64 KiB (older than session 10); learnt per process, not kept in the put cache: it costs one refused batch per command, on such a service only, and a kept refusal would outlive its upgrade
	noMatch     atomic.Bool                   // the service refused a match condition (older than batch version 4): records unconditional
	noMoveMatch atomic.Bool                   // the service refused a conditional move (older than session 14): rm reads what it keeps first
	markSeen    atomic.Bool                   // a lock-free put's batch was refused as conflicting: the put under the lock looks for an abandoned prune mark
	memSaved    chan error                    // a lock-free put's root memory save, awaited at its end (under c.changing)
	loneRead    time.Time                     // when the lock-free put read its root (loneTooOld)
	skew        atomic.Int64                  // the storage's clock minus this machine's, seen when the lock was taken (storageNow)
	changing    sync.Mutex                    // held by the command whose changes view tracks
	marks       func() ([]PendingMove, error) // the move marks, read as the command took its lock (movemark.go)

	ahead    aheadSlot[[2]string, []byte]  // an object read ahead of the root lookup (startReadAhead)
	draft    aheadSlot[string, *rootDraft] // a lone put's next root, drafted while its key request is out
	bases    baseCache                     // tree bases read or written (rootbase.go)
	pin      *treeRoot                     // the snapshot reads are pinned to (nil: the newest); history.go
	putFirst func(context.Context) error   // run by Put under its lock before it stores anything (Sync)
	putThen  func(context.Context) error   // run by Put under its lock when every file was stored (Sync)
	pinDirs  map[string]map[string]bool    // pin's directories and their children
}

// New returns a client for the user holding master, storing on be.
func New(be storage.Backend, master []byte, opts Options) (*Client, error) {
	uk, err := deriveUserKeys(master)
	if err != nil {
		return nil, err
	}
	if opts.Jobs <= 0 {
		opts.Jobs = DefaultJobs()
	}
	if opts.Scheme == 0 {
		opts.Scheme = mle.HCE2
	}
	if opts.Suite != 0 && opts.Suite != mle.SHA256 && opts.Suite != mle.BLAKE3 {
		return nil, fmt.Errorf("unknown MLE suite %v", opts.Suite)
	}
	for _, p := range append(append(append([]string{}, opts.Exclude...), opts.GetInclude...), opts.GetExclude...) {
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, fmt.Errorf("exclude pattern %q: %w", p, err)
		}
	}
	if opts.Scheme == mle.HCE1 {
		return nil, errors.New("HCE1 is not tag consistent (duplicate faking): refusing to store with it")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{be: be, keys: uk, ks: newKeySource(opts.Keys), opts: opts, log: log,
		suites: map[mle.Suite]*mle.MLE{}, large: make(chan struct{}, min(opts.Jobs, 2*runtime.NumCPU()))}
	uk.long.load = c.loadLongName
	c.batch = newBatchQueue(be)
	c.mem = opts.Roots
	if c.mem == nil {
		c.mem = &memRoot{}
	}
	for _, s := range []mle.Suite{mle.SHA256, mle.BLAKE3} {
		c.suites[s] = &mle.MLE{Suite: s, Scheme: opts.Scheme}
	}
	return c, nil
}

// DefaultJobs is the number of files transferred in parallel unless Options.Jobs says
// otherwise: 64, or twice the number of cores if that is more. Small files are bound by
// round trips, not cores (files over 1 MiB take one of 2 x cores slots): a put's workers
// wait mostly for their keys, and the more of them wait, the more digests share each key
// server request and the more objects each storage batch. On workload c (7,084 files) 16
// workers sent 1,900 key requests of 3.3 digests and 720 batches of 20 objects; 64 send
// 590 and 280-360, for ~20% less client and ~25% less server CPU.
func DefaultJobs() int { return max(64, 2*runtime.NumCPU()) }

// mleFor is the MLE instance for an n-byte message: the configured suite, or else the
// faster one for that size (mle.SuiteFor).
func (c *Client) mleFor(n int) *mle.MLE {
	if c.opts.Suite != 0 {
		return c.suites[c.opts.Suite]
	}
	return c.suites[mle.SuiteFor(n)]
}

// Close ends the client's use. It releases nothing today: the key deriver, which batches
// and coalesces key requests, is closed by its owner.
func (c *Client) Close() {}

// Summary reports what an operation did. Chunks, ChunksUploaded and ChunksKept count the
// chunks of the files stored (Files): a run cut short counts no chunk of a file it did not
// store (BytesUploaded still counts all that went out).
type Summary struct {
	Files          int            `json:"files"`
	Unchanged      int            `json:"unchanged"`            // files (among Files) already stored as they are: not read
	Excluded       int            `json:"excluded"`             // entries skipped by Options.Exclude
	NotStored      map[string]int `json:"not_stored,omitempty"` // put: local entries that hold nothing to store (sockets), by kind: skipped, not failed
	Kept           int            `json:"kept"`                 // get: existing files and links left in place (Options.Overwrite)
	Dirs           int            `json:"dirs"`
	Symlinks       int            `json:"symlinks"`
	Special        int            `json:"special"`         // FIFOs and devices (stored as metadata)
	Bytes          int64          `json:"bytes"`           // plaintext bytes of the files
	Chunks         int            `json:"chunks"`          // chunks in those files
	ChunksUploaded int            `json:"chunks_uploaded"` // chunks (among Chunks) sent: Chunks = ChunksUploaded + ChunksKept
	ChunksKept     int            `json:"chunks_kept"`     // chunks (among Chunks) already stored, or sent for another file of the run
	BytesUploaded  int64          `json:"bytes_uploaded"`  // ciphertext bytes sent (chunks + records)
	Fallback       map[string]int `json:"fallback,omitempty"`
	FallbackN      int            `json:"fallback_files"`    // put: files that fell back to a random key (no dedup) although a key server is configured
	Damaged        int            `json:"damaged,omitempty"` // rm: records removed that were damaged (not opening under this key): not kept as versions
	// put: files that changed while they were read (size, mtime or ctime): stored as read,
	// stored again by the next put
	ChangedWhileRead int         `json:"changed_while_read,omitempty"`
	Errors           []FileError `json:"errors,omitempty"`
	// put: files in flight when the caller stopped the run (Ctrl-C, SIGTERM): not stored,
	// and not failed either (not in Errors); the same put run again stores them
	Interrupted []StoppedFile `json:"interrupted,omitempty"`
	Duration    time.Duration `json:"duration_ns"`

	mu        sync.Mutex
	caller    context.Context // put: the caller's context, whose end interrupts (stoppedBy)
	stop      func(error)     // ends the run early (put: the service can store nothing, or is down; get: the disk is full, or the service down)
	halted    atomic.Bool     // stop was called: files failing because of it are not reported one by one
	downSince atomic.Int64    // unix ns of the first upload that found nothing listening, since one succeeded (0: none)
	// quiet: a lock-free put reports its progress (Events.Bytes) and its files
	// (Events.File, held) once it stands: a refused attempt is put again under the lock,
	// which reports them itself.
	quiet bool
	held  []fileEvent // quiet: the files' outcomes, in order
}

// fileEvent is one Events.File call held back (Summary.quiet).
type fileEvent struct {
	path string
	err  error
}

// FallbackFiles counts the files stored under random keys.
func (s *Summary) FallbackFiles() int {
	n := 0
	for _, v := range s.Fallback {
		n += v
	}
	return n
}

// FileError is a per-file failure that did not stop the run.
type FileError struct {
	Path string `json:"path"`
	Err  string `json:"error"`
}

func (e FileError) Error() string {
	if strings.HasPrefix(e.Err, e.Path+": ") {
		return e.Err // "docs: docs: deleted" says the path twice
	}
	return e.Path + ": " + e.Err
}

// StoppedFile is a file a run did not store because its caller stopped it (Interrupted).
type StoppedFile struct {
	Path string `json:"path"`
}

func (s *Summary) addErr(path string, err error) {
	s.mu.Lock()
	if s.stoppedBy(err) {
		s.Interrupted = append(s.Interrupted, StoppedFile{path})
	} else {
		s.Errors = append(s.Errors, FileError{path, err.Error()})
	}
	s.mu.Unlock()
}

// stoppedBy reports whether err is the caller's context ending (Summary.caller): the
// cancellation itself or its cause (main's "interrupted by SIGINT", which a transport
// error wraps), not a failure that came meanwhile (an unreadable file).
func (s *Summary) stoppedBy(err error) bool {
	if s.caller == nil || s.caller.Err() == nil {
		return false
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Cause(s.caller))
}

func (s *Summary) add(f func(s *Summary)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

// Err returns an error when some files failed, nil otherwise.
func (s *Summary) Err() error {
	if len(s.Errors) == 0 {
		return nil
	}
	sort.Slice(s.Errors, func(i, j int) bool { return s.Errors[i].Path < s.Errors[j].Path })
	return &PartialError{s.Errors}
}

// PartialError says that some files failed; the others went through.
type PartialError struct{ Files []FileError }

func (e *PartialError) Error() string {
	if len(e.Files) == 1 {
		return e.Files[0].Error()
	}
	return fmt.Sprintf("%d files failed, first: %v", len(e.Files), e.Files[0]) // two or more
}

// workers runs fn on c.opts.Jobs goroutines for every task sent to the returned channel;
// fn reports the task's outcome (c.done). finish closes the channel and waits.
func workers[T any](c *Client, fn func(T)) (work chan<- T, finish func()) {
	ch := make(chan T)
	var wg sync.WaitGroup
	for range c.opts.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				fn(t)
			}
		}()
	}
	return ch, func() { close(ch); wg.Wait() }
}

// largeFile is the size above which a file takes one of the 2 x cores large-transfer
// slots: many small files go in parallel (their cost is latency: key server and storage
// round trips), while the memory held by large ones stays bounded: up to four 8 MiB
// batches each (one being sent, one whose keys are derived, one read ahead and handed
// over, one being read: putahead.go), and chunk uploads in flight (maxUploadBytes).
const largeFile = 1 << 20

// transfer waits for a large-transfer slot if a file of size needs one; call the result
// when the transfer is over.
func (c *Client) transfer(ctx context.Context, size int64) (func(), error) {
	if size <= largeFile {
		return func() {}, nil
	}
	select {
	case c.large <- struct{}{}:
		return func() { <-c.large }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// done records the outcome of one item: a per-item error in sum, and the File event.
func (c *Client) done(sum *Summary, path string, err error) {
	if errors.Is(err, errUnderClash) {
		err = nil // not stored, but said once, by the folder above it (putclash.go)
	} else if err != nil {
		sum.addErr(path, err)
		if sum.halted.Load() && (stopsRun(err) || diskFull(err) || errors.Is(err, context.Canceled)) {
			return // the run's error says it once ("put stopped: ...", "get stopped: ...")
		}
		if sum.stop != nil && sum.shouldHalt(err) {
			if diskFull(err) { // get: named by the run's error, not a line of its own too
				sum.halt(&fileError{path, err})
				return
			}
			sum.halt(err)
		}
	}
	if sum.quiet {
		sum.add(func(s *Summary) { s.held = append(s.held, fileEvent{path, err}) })
		return
	}
	c.event(path, err)
}

// outageGrace is how long a storage service may refuse connections before a put stops
// (shouldHalt): a restart of the service fails no file, as retries and the files' resends
// ride it out, while a service that is down stops the run instead of failing every file
// in turn.
var outageGrace = 5 * time.Second

// shouldHalt reports whether err stops the run: at once if the service can store nothing,
// and if nothing accepted a connection (stopsRun) only once that has lasted outageGrace
// since the first such failure with no upload succeeding in between (reachable).
func (s *Summary) shouldHalt(err error) bool {
	if errors.Is(err, storage.ErrCannotStore) || diskFull(err) {
		return true
	}
	if !stopsRun(err) {
		return false
	}
	now := time.Now().UnixNano()
	if s.downSince.CompareAndSwap(0, now) {
		return false
	}
	return time.Duration(now-s.downSince.Load()) >= outageGrace
}

// reachable notes that the service answered an upload: an outage, if any, is over.
func (s *Summary) reachable() {
	if s.downSince.Load() != 0 {
		s.downSince.Store(0)
	}
}

// halt stops the run with err, once.
func (s *Summary) halt(err error) {
	if s.halted.CompareAndSwap(false, true) {
		s.stop(err)
	}
}

// reportHeld reports the files a quiet (lock-free) put held back, now that it stands.
func (c *Client) reportHeld(sum *Summary) {
	sum.mu.Lock()
	held := sum.held
	sum.held = nil
	sum.mu.Unlock()
	for _, f := range held {
		c.event(f.path, f.err)
	}
}

func (c *Client) event(path string, err error) {
	if c.opts.Events.File != nil {
		c.opts.Events.File(path, err)
	}
}

// timer measures a phase when Events.Phase is set.
func (c *Client) timer(phase string) func() {
	if c.opts.Events.Phase == nil {
		return func() {}
	}
	t := time.Now()
	return func() { c.opts.Events.Phase(phase, time.Since(t)) }
}

func (c *Client) bytesDone(n int64) {
	if c.opts.Events.Bytes != nil {
		c.opts.Events.Bytes(n)
	}
}

// putBytes reports n plaintext bytes of a put as done, unless the put is quiet.
func (c *Client) putBytes(sum *Summary, n int64) {
	if !sum.quiet {
		c.bytesDone(n)
	}
}

// Objects live in the user's namespace as:
//
//	<encdir>/<encname>.key          key record of a file or symlink
//	<encdir>/.dir                   metadata record of a directory (mode, mtime)
//	.veil/chunks/<hh>/<tag hex>     chunk ciphertexts, named by their MLE tag
const (
	dirMetaName = ".dir"
	chunkRoot   = ".veil/chunks"
)

func chunkLocation(h mle.Tag) (dir, name string) {
	x := hex.EncodeToString(h[:])
	return chunkRoot + "/" + x[:2], x
}

// isInternal reports whether a storage entry name is veil's bookkeeping, not a user entry.
func isInternal(name string) bool { return strings.HasPrefix(name, ".") }

// readRecord fetches and opens the record at encDir/encName (encName without suffix for
// directories' ".dir").
// The record is the one the tree root lists: from its path, or from its kept version
// (history.go) when the object there is gone or another one.
func (c *Client) readRecord(ctx context.Context, encDir, objName string) (*record, error) {
	b, err := c.recordBytes(ctx, encDir, objName, true)
	if err != nil {
		return nil, err
	}
	path := storage.Join(encDir, objName)
	r, err := c.keys.openRecord(b, path)
	if err != nil {
		return nil, err
	}
	if err := c.checkRecord(path, b); err != nil {
		return nil, err
	}
	c.cacheRecord(path, b)
	return r, nil
}

const maxRecordBytes = recordHeader + 16 + 1<<16 + maxRecordChunks*chunkRefSize

// recordWriteTimeout bounds a record write that goes on after its command was interrupted.
const recordWriteTimeout = 2 * time.Minute

func (c *Client) writeRecord(ctx context.Context, encDir, objName string, r *record) (int64, error) {
	return c.writeRecordAs(ctx, encDir, objName, r, nil, false)
}

// writeRecordWith writes a record as writeRecord does; objects in with (chunks it points
// to) go in the same atomic batch before it (putfold.go).
func (c *Client) writeRecordWith(ctx context.Context, encDir, objName string, r *record, with []storage.Object) (int64, error) {
	return c.writeRecordAs(ctx, encDir, objName, r, with, false)
}

// writeRecordAs is writeRecordWith; with adopt, a record for a path this command believed
// free (a folder's it gives one: writeFolderRecord) that another command wrote meanwhile
// is taken as this command's, not written over (keepOthers). It returns the bytes written
// (0 for a record adopted).
func (c *Client) writeRecordAs(ctx context.Context, encDir, objName string, r *record, with []storage.Object, adopt bool) (int64, error) {
	path := storage.Join(encDir, objName)
	b := c.keys.sealRecord(r, path)
	if err := c.storeLongNames(ctx, path); err != nil {
		return 0, err
	}
	if err := c.keepBeforeWrite(ctx, path); err != nil {
		return 0, err
	}
	// Once the record is being written, the write is finished even if the command is
	// interrupted: a request cut off in flight may still be committed by the service, and
	// a record stored but not listed by the command's root reads as damage until the
	// command runs again (found by a user's Ctrl-C during a put). Bounded, and a second
	// Ctrl-C ends the process.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWriteTimeout)
	defer cancel()
	// wrote ends a write that left stored at path (b, or the record adopted): noted for
	// the command's root (unless a root that went with it lists it already), and no
	// longer expecting another command's record.
	wrote := func(stored []byte, published bool) (int64, error) {
		if !published {
			c.noteRecord(path, stored)
		}
		c.forgetExpect(path)
		if !bytes.Equal(stored, b) {
			return 0, nil
		}
		return int64(len(b)), nil
	}
	for try := 1; ; try++ {
		obj := c.conditioned(storage.Object{Dir: encDir, Name: objName, Data: b}, path)
		var published bool
		var err error
		if len(with) > 0 {
			// The command's next root goes with them when it can (putroot.go).
			published, err = c.putWithRoot(ctx, append(with[:len(with):len(with)], obj), path, b)
		} else {
			err = c.putObjectCond(ctx, obj)
		}
		switch {
		case err == nil:
			return wrote(b, published)
		case c.noMatchService(err, obj):
			continue // written again without the condition
		case !lostRecordRace(err, obj) || try == recordTries:
			return 0, err
		}
		// Another command wrote the record meanwhile (recordcas.go): keep its version and
		// write over it, or adopt it; or an earlier try of this very write was committed
		// after all.
		var adoptFor *record
		if adopt && obj.Create {
			adoptFor = r
		}
		stored, err := c.keepOthers(ctx, path, b, adoptFor)
		if err != nil {
			return 0, err
		}
		if stored != nil {
			return wrote(stored, false)
		}
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
