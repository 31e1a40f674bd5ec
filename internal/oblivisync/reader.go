package oblivisync

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// loadCommitted reads every metadata page the superblock lists.
func loadCommitted(be *backend, sb *superblock) (map[uint64]*node, error) {
	out := map[uint64]*node{}
	for p, pl := range sb.Pages {
		data := make([]byte, 0, pl.Size)
		for i, r := range pl.Frags {
			frag, err := be.fragment(r, pageObj(p), uint32(i), sb)
			if err != nil {
				return nil, fmt.Errorf("metadata page %d: %w", p, err)
			}
			data = append(data, frag...)
		}
		if len(data) != int(pl.Size) {
			return nil, fmt.Errorf("%w: metadata page %d is %d bytes, superblock says %d", ErrFormat, p, len(data), pl.Size)
		}
		nodes, err := decodePage(p, data, be.g, be.params.Files)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if n.Ver > sb.Epoch { // a newer copy of the page, written since: reload
				return nil, fmt.Errorf("%w: metadata page %d: inode %d committed at epoch %d, after the superblock's %d", errStale, p, n.Ino, n.Ver, sb.Epoch)
			}
			out[n.Ino] = n
		}
	}
	return out, nil
}

// Reader is a read-only client: it shows the backend's committed state (only fully
// synced versions) and follows new epochs. Any number of readers may share a backend
// with one writer; readers never write to it.
type Reader struct {
	mu      sync.Mutex
	be      *backend
	sb      *superblock
	t       *tree
	stamp   string
	checked time.Time
	// MinRefresh is how often, at most, the superblock is checked for a new epoch.
	MinRefresh time.Duration
	seenPath   string // reader-seen, when the reader remembers (ReaderOptions.Remember)

	pins    map[uint64]*pin // open handles' pinned versions (reader_pin.go)
	nextFh  uint64
	copyMax uint64 // files up to this size are copied at open (PinCopyMax)
}

// OpenReader opens the backend at dir read-only, remembering nothing between runs
// (OpenReaderWith can).
func OpenReader(dir string, pass []byte) (*Reader, error) {
	return OpenReaderWith(dir, pass, ReaderOptions{})
}

func (r *Reader) superStamp() string {
	// The container's version byte and nonce: every superblock is sealed with a fresh
	// random nonce, so a new epoch always changes them. (File identity and mtime did not:
	// a reused inode number and the file system's coarse clock made two epochs written
	// within one tick look the same, and the reader skipped one.)
	hdr, err := r.be.superHeader()
	if err != nil {
		return ""
	}
	return string(hdr)
}

// reload reads the superblock and metadata; a concurrent epoch can make a page fragment
// stale mid-read, so it retries a few times.
func (r *Reader) reload() error {
	var err error
	for try := 0; try < 5; try++ {
		var sb *superblock
		if sb, err = r.be.readSuper(); err != nil {
			if errors.Is(err, ErrIntegrity) && try < 4 {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return err
		}
		if r.sb != nil && sb.Epoch < r.sb.Epoch {
			return fmt.Errorf("%w: superblock went back from epoch %d to %d (rollback)", ErrIntegrity, r.sb.Epoch, sb.Epoch)
		}
		var com map[uint64]*node
		if com, err = loadCommitted(r.be, sb); err != nil {
			if errors.Is(err, errStale) || errors.Is(err, errBehind) && try < 4 {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		if err := r.checkRemembered(sb); err != nil {
			return err
		}
		t := newTree()
		t.newerWins = true
		for _, n := range com {
			t.put(n)
		}
		if t.get(rootIno) == nil {
			t.put(newRoot(0))
		}
		r.advancePins(t, sb.Epoch)
		// The stamp is the header of the superblock just read (readSuper kept its nonce),
		// not a second read of the file.
		stamp := string(append([]byte{containerVersion}, r.be.superNonce...))
		r.sb, r.t, r.stamp, r.checked = sb, t, stamp, time.Now()
		return nil
	}
	return err
}

// refresh reloads if the superblock changed (checked at most every MinRefresh).
func (r *Reader) refresh() {
	if time.Since(r.checked) < r.MinRefresh {
		return
	}
	r.checked = time.Now()
	if r.superStamp() != r.stamp {
		r.reload() // on failure keep serving the last good epoch
	}
}

// Refresh reloads the backend's state now if a new epoch was committed.
func (r *Reader) Refresh() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.superStamp() == r.stamp {
		return nil
	}
	return r.reload()
}

// Epoch is the epoch of the state being shown.
func (r *Reader) Epoch() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sb.Epoch
}

func (r *Reader) visible(ino uint64) *node {
	r.refresh()
	if n := r.t.get(ino); n != nil && r.t.reachable(ino) {
		return n
	}
	return nil
}

func (r *Reader) GetAttr(ino uint64) (Attr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.visible(ino); n != nil {
		return n.attr(), nil
	}
	for _, p := range r.pins { // an open file whose name now leads elsewhere (fstat)
		if p.n.Ino == ino {
			return p.n.attr(), nil
		}
	}
	return Attr{}, ErrNotExist
}

func (r *Reader) Lookup(parent uint64, name string) (Attr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.visible(parent) == nil {
		return Attr{}, ErrNotExist
	}
	if n := r.t.lookup(parent, name); n != nil {
		return n.attr(), nil
	}
	return Attr{}, ErrNotExist
}

func (r *Reader) ReadDir(ino uint64) ([]DirEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.visible(ino)
	if n == nil {
		return nil, ErrNotExist
	}
	if !n.isDir() {
		return nil, ErrNotDir
	}
	return r.t.children(ino), nil
}

func (r *Reader) Readlink(ino uint64) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.visible(ino)
	if n == nil || !n.isLink() {
		return "", ErrInvalid
	}
	return n.Target, nil
}

// Read reads committed file content; a fragment overwritten by a newer epoch than the one
// shown triggers a reload and one retry.
func (r *Reader) Read(ino uint64, off int64, buf []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for try, behind := 0, 0; ; {
		n := r.visible(ino)
		if n == nil {
			return 0, ErrNotExist
		}
		if !n.isReg() {
			return 0, ErrIsDir
		}
		got, err := r.read(n, off, buf)
		switch {
		case err != nil && errors.Is(err, errStale) && try < 3:
			try++
			if rerr := r.reload(); rerr != nil {
				return 0, rerr
			}
			continue
		case err != nil && errors.Is(err, errBehind) && behind < behindRetries:
			behind++ // the file this epoch wrote has not reached this machine yet
			time.Sleep(behindWait)
			continue
		}
		return got, err
	}
}

func (r *Reader) read(n *node, off int64, buf []byte) (int, error) {
	return readFragments(n, off, buf, r.be.g.C, func(idx, from uint32, dst []byte) error {
		return readSynced(r.be, n.Frags[idx], n.Ino, idx, r.sb, from, dst)
	})
}

// StatFS reports the committed state's numbers.
func (r *Reader) StatFS() StatFS {
	r.mu.Lock()
	defer r.mu.Unlock()
	var used uint64
	for _, n := range r.t.nodes {
		for _, f := range n.Frags {
			if !f.isHole() {
				used += uint64(f.span())
			}
		}
	}
	return StatFS{Capacity: uint64(r.be.params.Files) * 2 * uint64(r.be.g.S), Used: used, Inodes: uint64(len(r.t.nodes))}
}

func (r *Reader) Mkdir(uint64, string, uint32, uint32, uint32) (Attr, error) {
	return Attr{}, ErrReadOnly
}
func (r *Reader) Create(uint64, string, uint32, uint32, uint32) (Attr, error) {
	return Attr{}, ErrReadOnly
}
func (r *Reader) Symlink(uint64, string, string, uint32, uint32) (Attr, error) {
	return Attr{}, ErrReadOnly
}
func (r *Reader) Unlink(uint64, string) error                       { return ErrReadOnly }
func (r *Reader) Rmdir(uint64, string) error                        { return ErrReadOnly }
func (r *Reader) Rename(uint64, string, uint64, string, bool) error { return ErrReadOnly }
func (r *Reader) SetAttr(uint64, SetAttr) (Attr, error)             { return Attr{}, ErrReadOnly }
func (r *Reader) Write(uint64, int64, []byte) (int, error)          { return 0, ErrReadOnly }
func (r *Reader) Flush() error                                      { return nil }
