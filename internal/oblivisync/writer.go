package oblivisync

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Options configure a read-write client.
type Options struct {
	// StateDir holds the local journal; default StateRoot/<backend id>. It must NOT be
	// inside the synced folder.
	StateDir string
	// StateRoot is where default state directories go (cmd/veil passes
	// $XDG_STATE_HOME/veil/osync, else ~/.local/state/veil/osync). One of StateDir and
	// StateRoot must be set.
	StateRoot string
	// MaxPending bounds the journal (pending buffer) in bytes; writes beyond it fail with
	// ErrNoSpace. Default: the backend's capacity.
	MaxPending int64
	// UnsafeNoFsync skips fsync of backend and journal files (benchmarks only: a machine
	// crash may then lose acknowledged data; a process crash still loses nothing).
	UnsafeNoFsync bool
	// LeaseTTL is how long the backend's writer lease outlives this writer's last
	// renewal (it renews every epoch); a crashed writer's lease can be taken over by
	// another state directory after it. Default DefaultLeaseTTL; at least 4 drip times.
	LeaseTTL time.Duration
	// Host names this machine in the lease (shown to a refused second writer).
	Host   string
	Logger *slog.Logger
}

// Writer is the read-write client: it serves the frontend filesystem from its current
// state and syncs it to the backend one epoch at a time. Safe for concurrent use.
type Writer struct {
	epochMu sync.Mutex // one epoch at a time; taken before mu
	mu      sync.Mutex
	be      *backend
	opts    Options
	j       *journal
	lock    *os.File
	log     *slog.Logger

	id        [writerIDLen]byte // this state directory's writer id (in `seen` and the lease)
	nextNonce []byte            // nonce of the next superblock, recorded in `seen` first
	lease     *lease            // this writer's lease, once acquired

	cur      *tree                       // frontend state (what the mount shows)
	com      map[uint64]*node            // committed state (what the backend shows)
	comPages map[uint32]map[uint64]*node // committed nodes by metadata page
	sb       *superblock                 // committed superblock
	pend     map[fragKey]*pfrag          // fragments waiting in the buffer
	npend    map[uint64]int              // pending fragments per inode
	dirty    map[uint64]bool             // inodes whose current version differs from committed
	nextIno  uint64
	seq      uint64
	prevRefs []ref // committed refs one epoch back (readers may still use them)
	// prevKnown: prevRefs holds the committed state before w.sb's (false until this
	// writer's first epoch: it is not persisted; see nextEpoch).
	prevKnown bool
	broken    error
	changed   bool                     // state changed since the last checkpoint
	opens     map[uint64]int           // open file handles per inode (FUSE)
	detached  map[uint64]*detachedFile // open files whose last name is gone
}

type fragKey struct {
	ino uint64
	idx uint32
}

// extent is a byte range of a pending fragment whose bytes are in a journal record
// (seg, rec, at data) or are zeros (seg == zeroSeg).
type extent struct {
	off, n uint32
	seg    uint32
	rec    int64
	data   uint32
}

const zeroSeg = ^uint32(0)

type pfrag struct {
	seq uint64
	ext []extent
}

const maxExtents = 32

// StateDirFor is the state directory for the backend with this id: dir when given, else
// root/<id>. The library reads no environment: the caller resolves root.
func StateDirFor(dir, root string, id [16]byte) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if root == "" {
		return "", errors.New("no state directory given (--state DIR)")
	}
	return filepath.Join(root, hex.EncodeToString(id[:])), nil
}

// OpenWriter opens the backend at dir read-write, recovering any pending changes from the
// local journal (after a crash nothing acknowledged is lost).
func OpenWriter(dir string, pass []byte, o Options) (*Writer, error) {
	be, err := openBackend(dir, pass)
	if err != nil {
		return nil, err
	}
	be.fsync = !o.UnsafeNoFsync
	if o.StateDir, err = StateDirFor(o.StateDir, o.StateRoot, be.id); err != nil {
		return nil, err
	}
	if o.MaxPending <= 0 {
		o.MaxPending = int64(be.params.Files) * int64(be.params.FileSize)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckOutside(dir, o.StateDir, "state directory"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(o.StateDir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%s: %w", o.StateDir, ErrLocked)
	}
	w := &Writer{be: be, opts: o, lock: lock, log: o.Logger, pend: map[fragKey]*pfrag{},
		npend: map[uint64]int{}, dirty: map[uint64]bool{}, opens: map[uint64]int{}, detached: map[uint64]*detachedFile{}}
	if err := w.start(); err != nil {
		w.closeFiles()
		return nil, err
	}
	return w, nil
}

// start takes the backend's lease, removes this writer's own leftover temp files, and
// recovers the frontend state.
func (w *Writer) start() error {
	o := w.opts
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.LeaseTTL < 4*w.be.params.DripTime {
		return fmt.Errorf("%w: lease TTL %s is less than 4 drip times (%s)", ErrInvalid, o.LeaseTTL, 4*w.be.params.DripTime)
	}
	id, err := loadWriterID(o.StateDir, !o.UnsafeNoFsync)
	if err != nil {
		return err
	}
	w.id = id
	w.be.tag = writerTag(w.id)
	now := time.Now()
	me := &lease{Writer: w.id, Acquired: now, Renewed: now, TTL: o.LeaseTTL, Host: o.Host}
	if err := w.be.acquireLease(me, now); err != nil {
		return err
	}
	w.lease = me
	removeStaleTemps(w.be.dir, w.be.tag, now)
	removeLocalTemps(o.StateDir)
	return w.recover()
}

func (w *Writer) recover() error {
	if err := w.load(false); err != nil {
		return err
	}
	w.changed = true
	if err := w.checkpoint(); err != nil {
		return err
	}
	if err := w.writeSeen(w.sb.Epoch, w.be.superNonce); err != nil {
		return err
	}
	return w.writeStatus()
}

// load rebuilds the frontend state from the backend's committed state, the checkpoint
// and the journal. With readOnly it changes no file (`veil osync status` reads a stopped
// writer's journal this way) and a state behind the backend is recorded in w.broken
// instead of failing.
func (w *Writer) load(readOnly bool) error {
	sb, err := w.be.readSuper()
	if err != nil {
		return err
	}
	com, err := loadCommitted(w.be, sb)
	if err != nil {
		return err
	}
	if err := checkSeen(w.be.dir, w.opts.StateDir, sb.Epoch, w.be.superNonce); err != nil {
		if !readOnly {
			return err
		}
		w.broken = err
	}
	w.sb, w.com, w.comPages = sb, com, map[uint32]map[uint64]*node{}
	for ino, n := range com {
		w.comPut(ino, n)
	}
	w.j = &journal{dir: w.opts.StateDir, key: w.be.keys.journal, fsync: !w.opts.UnsafeNoFsync, limit: w.opts.MaxPending, readOnly: readOnly}
	ck, err := readCheckpoint(w.opts.StateDir, &w.be.keys.journal, w.be.g, w.be.params.Files)
	if err != nil {
		return err
	}
	var seg uint32
	var off int64
	if ck == nil {
		if segs, _ := listSegments(w.opts.StateDir); len(segs) > 0 {
			return fmt.Errorf("%w: %s has journal segments but no checkpoint", ErrIntegrity, w.opts.StateDir)
		}
		w.cur = newTree()
		for _, n := range com {
			w.cur.put(n.clone())
		}
		w.nextIno = sb.NextIno
	} else {
		if ck.epoch > sb.Epoch {
			return rolledBack(w.be.dir, w.opts.StateDir, fmt.Sprintf("it is at epoch %d but this machine's journal saw epoch %d", sb.Epoch, ck.epoch))
		}
		w.cur, w.pend, w.nextIno, w.seq = ck.cur, ck.pend, ck.nextIno, ck.seq
		seg, off = ck.seg, ck.off
		for k := range w.pend {
			w.npend[k.ino]++
		}
	}
	err = w.j.replay(seg, off, func(s uint32, o int64, plain []byte) error { return w.applyRecord(s, o, plain) })
	if err != nil {
		return err
	}
	if w.cur.get(rootIno) == nil {
		w.cur.put(newRoot(time.Now().UnixNano()))
	}
	w.nextIno = max(w.nextIno, sb.NextIno, rootIno+1)
	for ino := range w.cur.nodes {
		w.nextIno = max(w.nextIno, ino+1)
		w.markIfDirty(ino)
	}
	for ino := range w.com {
		w.markIfDirty(ino)
	}
	return nil
}

func (w *Writer) markIfDirty(ino uint64) {
	c, n := w.com[ino], w.cur.get(ino)
	if w.npend[ino] > 0 || (c == nil) != (n == nil) || (c != nil && string(appendNode(nil, c)) != string(appendNode(nil, n))) {
		w.dirty[ino] = true
	}
}

func (w *Writer) comPut(ino uint64, n *node) {
	p := pageOf(ino)
	m := w.comPages[p]
	if n == nil {
		delete(w.com, ino)
		if m != nil {
			delete(m, ino)
		}
		return
	}
	if m == nil {
		m = map[uint64]*node{}
		w.comPages[p] = m
	}
	w.com[ino], m[ino] = n, n
}

// Flush makes every acknowledged change durable in the local journal (fsync). Once a
// journal fsync has failed it keeps failing, and the writer stops (see journal.failed).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.j == nil {
		return nil
	}
	return w.j.sync()
}

// Close checkpoints the journal and releases the state directory. Pending changes stay in
// the journal and are synced by the next writer on this machine.
func (w *Writer) Close() error {
	w.epochMu.Lock()
	defer w.epochMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	if w.broken == nil && w.j != nil {
		err = w.checkpoint()
	}
	if cerr := w.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (w *Writer) closeFiles() error {
	var err error
	if w.lease != nil {
		w.be.releaseLease(w.id)
		w.lease = nil
	}
	if w.j != nil {
		err = w.j.close()
		w.j = nil
	}
	if w.lock != nil {
		w.lock.Close()
		w.lock = nil
	}
	return err
}

func (w *Writer) usable() error {
	if w.broken == nil && w.j != nil {
		w.broken = w.j.err() // a failed journal fsync stops the writer for good
	}
	if w.broken != nil {
		return fmt.Errorf("writer stopped after an earlier failure (restart to recover from the journal): %w", w.broken)
	}
	if w.j == nil {
		return errors.New("writer is closed")
	}
	return nil
}
