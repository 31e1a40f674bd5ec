package oblivisync

import "fmt"

// Open files that are unlinked or renamed over stay usable until their last close, as
// POSIX wants (programs keep scratch files this way). The FUSE layer reports opens and
// releases; when the name of an open regular file goes away, its content is copied into
// memory (it is deleted from the journal and the backend as usual) and reads, writes and
// getattr on the inode are served from that copy until the last release. Like any deleted
// file it does not survive a crash. Larger files than maxDetached are not kept (ENOENT).
const maxDetached = 64 << 20

type detachedFile struct {
	n    node
	data []byte
}

// Hold records an open of ino (a read-write client only; the Reader ignores it).
func (w *Writer) Hold(ino uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opens[ino]++
}

// Release records the close of an open of ino; the last one frees a detached copy.
func (w *Writer) Release(ino uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.opens[ino]--; w.opens[ino] <= 0 {
		delete(w.opens, ino)
		delete(w.detached, ino)
	}
}

// detach keeps the content of n, about to lose its last name, while it is open.
func (w *Writer) detach(n *node) error {
	if w.opens[n.Ino] == 0 || !n.isReg() || n.Size > maxDetached {
		return nil
	}
	data := make([]byte, n.Size)
	if _, err := w.readData(n, 0, data); err != nil {
		return fmt.Errorf("keep open file %d: %w", n.Ino, err)
	}
	c := *n
	c.Frags = nil
	w.detached[n.Ino] = &detachedFile{n: c, data: data}
	return nil
}

func (d *detachedFile) read(off int64, buf []byte) (int, error) {
	if off < 0 {
		return 0, ErrInvalid
	}
	if off >= int64(len(d.data)) {
		return 0, nil
	}
	return copy(buf, d.data[off:]), nil
}

func (d *detachedFile) write(off int64, data []byte) (int, error) {
	end := off + int64(len(data))
	if off < 0 || end > maxDetached {
		return 0, fmt.Errorf("%w: write to a deleted open file past %d bytes", ErrFileTooBig, maxDetached)
	}
	d.resize(uint64(max(end, int64(len(d.data)))))
	copy(d.data[off:], data)
	d.n.Mtime = now()
	return len(data), nil
}

func (d *detachedFile) resize(size uint64) {
	if size <= uint64(len(d.data)) {
		d.data = d.data[:size]
	} else {
		d.data = append(d.data, make([]byte, size-uint64(len(d.data)))...)
	}
	d.n.Size = size
}

func (d *detachedFile) setAttr(s SetAttr) (Attr, error) {
	if s.Size != nil {
		if *s.Size > maxDetached {
			return Attr{}, fmt.Errorf("%w: a deleted open file is kept up to %d bytes", ErrFileTooBig, maxDetached)
		}
		d.resize(*s.Size)
		d.n.Mtime = now()
	}
	if s.Mode != nil {
		d.n.Mode = d.n.Mode&^0o7777 | *s.Mode&0o7777
	}
	if s.Uid != nil {
		d.n.Uid = *s.Uid
	}
	if s.Gid != nil {
		d.n.Gid = *s.Gid
	}
	if s.Atime != nil {
		d.n.Atime = *s.Atime
	}
	if s.Mtime != nil {
		d.n.Mtime = *s.Mtime
	}
	d.n.Ctime = now()
	return d.n.attr(), nil
}
