package oblivisync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A read-only client pins the version of a file each open handle opened (issue 17 item
// 1): reads through the handle use that version's fragment references, whatever epochs
// come later, so an open descriptor keeps reading what it opened and one read never mixes
// two versions. The fragments stay where they are while the version is committed and for
// two more epochs after: the writer never overwrites a location the superblock of epoch X
// references with a backend file numbered X+2 or less (nextEpoch in epoch.go). So a read
// is valid if every backend file it uses was written at most two epochs after the newest
// epoch at which this reader saw the version still committed (liveAt). A file newer than
// that makes the reader reload and, if the version is still committed, move liveAt on;
// otherwise the version may be overwritten and the read fails with ErrStale.
//
// "Still committed" is decided by the version's identity, the record's Ver (the epoch that
// committed that content, page version 2), not by where its fragments are: once the
// writer may reuse the space, a later version can be written exactly where the pinned one
// was, with the same references (found by review in session 11: the reader took it for
// the pinned version and read its bytes). Records without a Ver (version 1 pages) and a
// Ver that changed with the references not (a writer that re-stamped unchanged content)
// count as the same version only if seen at most two epochs after liveAt: nothing can
// have been written at those locations by then, so they still hold the pinned bytes.

// Files up to PinCopyMax bytes are read whole at open and served from memory, so their
// descriptors keep their version however long they stay open and however far the reader
// falls behind (an open of such a file costs one read of it: the reader decrypts whole
// backend files anyway). Larger files are read in place as described above.
const PinCopyMax = 8 << 20

// pin is one open handle's version of a file.
type pin struct {
	n      *node       // the version opened (reader nodes are never modified)
	sb     *superblock // the superblock at open: its written[] and tags (rollback check)
	liveAt uint64      // newest epoch at which this version was seen committed
	ver    uint64      // the version's identity (node.Ver; 0: unknown)
	data   []byte      // the whole version, for files up to PinCopyMax
}

func (r *Reader) newPin(n *node) *pin {
	return &pin{n: n, sb: r.sb, liveAt: r.sb.Epoch, ver: n.Ver}
}

// Open pins the current version of a regular file and returns a handle for ReadHandle.
// An inode no longer in the current state (the kernel's cached name lookup is older than
// the epoch the reader now shows) is ErrStale, so the kernel looks the name up again.
func (r *Reader) Open(ino uint64) (uint64, Attr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.visible(ino)
	switch {
	case n == nil:
		return 0, Attr{}, fmt.Errorf("%w: inode %d is not in epoch %d", ErrStale, ino, r.sb.Epoch)
	case n.isDir():
		return 0, Attr{}, ErrIsDir
	}
	p := r.newPin(n)
	if n.isReg() && n.Size <= r.copyMax {
		var err error
		if p, err = r.copyVersion(p); err != nil {
			return 0, Attr{}, err
		}
	}
	if r.pins == nil {
		r.pins = map[uint64]*pin{}
	}
	r.nextFh++
	r.pins[r.nextFh] = p
	return r.nextFh, p.n.attr(), nil
}

// copyVersion reads a small file whole into its pin. If the writer got more than two
// epochs ahead of the state the reader holds, it reloads and pins the version current
// then (or reports ErrStale if the inode is gone, so the kernel looks the name up again).
func (r *Reader) copyVersion(p *pin) (*pin, error) {
	for try, behind := 0, 0; ; {
		buf := make([]byte, p.n.Size)
		_, err := readFragments(p.n, 0, buf, r.be.g.C, func(idx, from uint32, dst []byte) error {
			return r.readPinned(p, idx, from, dst)
		})
		switch {
		case err == nil:
			p.data = buf
			return p, nil
		case errors.Is(err, errGone) && try < 5:
			try++
			if err := r.reload(); err != nil {
				return nil, err
			}
			n := r.t.get(p.n.Ino)
			if n == nil || !n.isReg() || !r.t.reachable(n.Ino) {
				return nil, fmt.Errorf("%w: inode %d is not in epoch %d", ErrStale, p.n.Ino, r.sb.Epoch)
			}
			p = r.newPin(n)
			if n.Size > r.copyMax {
				return p, nil // grew: read in place
			}
			continue
		case errors.Is(err, errBehind) && behind < behindRetries:
			behind++
			time.Sleep(behindWait)
			continue
		}
		return nil, err
	}
}

// Release forgets a handle.
func (r *Reader) Release(fh uint64) {
	r.mu.Lock()
	delete(r.pins, fh)
	r.mu.Unlock()
}

// HandleAttr returns the attributes of the version a handle pinned (fstat).
func (r *Reader) HandleAttr(fh uint64) (Attr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pins[fh]
	if p == nil {
		return Attr{}, ErrNotExist
	}
	return p.n.attr(), nil
}

// ReadHandle reads from the version a handle pinned.
func (r *Reader) ReadHandle(fh uint64, off int64, buf []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pins[fh]
	if p == nil {
		return 0, ErrNotExist
	}
	if p.data != nil || p.n.Size == 0 {
		if off < 0 {
			return 0, ErrInvalid
		}
		if off >= int64(len(p.data)) {
			return 0, nil
		}
		return copy(buf, p.data[off:]), nil
	}
	r.refresh() // follow epochs while the handle is read, so liveAt keeps up
	for reloaded, behind := false, 0; ; {
		got, err := readFragments(p.n, off, buf, r.be.g.C, func(idx, from uint32, dst []byte) error {
			return r.readPinned(p, idx, from, dst)
		})
		switch {
		case errors.Is(err, errGone) && !reloaded:
			reloaded = true
			if r.superStamp() != r.stamp {
				if rerr := r.reload(); rerr != nil {
					return 0, rerr
				}
			}
			continue
		case errors.Is(err, errGone):
			return 0, fmt.Errorf("%w: the version of inode %d this handle opened was overwritten (this reader is more than two epochs behind it); reopen the file", ErrStale, p.n.Ino)
		case errors.Is(err, errBehind) && behind < behindRetries:
			behind++ // the file this epoch wrote has not reached this machine yet
			time.Sleep(behindWait)
			continue
		}
		return got, err
	}
}

// errGone: a backend file is newer than a pinned version is guaranteed to survive.
var errGone = errors.New("pinned version may be overwritten")

func (r *Reader) readPinned(p *pin, idx, from uint32, dst []byte) error {
	clear(dst)
	ref := p.n.Frags[idx]
	if ref.isHole() || from >= ref.Valid {
		return nil
	}
	plain, err := r.be.readBlock(ref.File, p.sb.Written[ref.File], p.sb.tag(ref.File))
	if err != nil {
		return err
	}
	if binary.BigEndian.Uint64(plain) > p.liveAt+2 {
		return errGone
	}
	off := r.be.g.sideStart(ref.Side) + int(ref.Off)
	h := plain[off : off+fragHdr]
	be := binary.BigEndian
	if be.Uint64(h) != p.n.Ino || be.Uint32(h[8:]) != idx || be.Uint32(h[12:]) != ref.Stored {
		return fmt.Errorf("%w: backend file %s side %d offset %d does not hold fragment %d of inode %d", ErrIntegrity, blockName(ref.File), ref.Side, ref.Off, idx, p.n.Ino)
	}
	copy(dst, plain[off+fragHdr+int(from):off+fragHdr+int(ref.Valid)])
	return nil
}

// advancePins moves liveAt on for every pinned version the new state still commits.
func (r *Reader) advancePins(t *tree, epoch uint64) {
	for _, p := range r.pins {
		if p.data != nil {
			continue
		}
		n := t.get(p.n.Ino)
		if n == nil || n.Size != p.n.Size || !slices.Equal(n.Frags, p.n.Frags) {
			continue
		}
		switch {
		case p.ver != 0 && n.Ver == p.ver: // the same version, still committed
		case epoch <= p.liveAt+2: // the same bytes: see the comment at the top
			p.ver = n.Ver
		default: // maybe another version where the pinned one was: not trusted
			continue
		}
		p.liveAt = epoch
	}
}
