package oblivisync

import (
	"fmt"
	"syscall"
	"time"
)

func now() int64 { return time.Now().UnixNano() }

// GetAttr returns the current attributes of ino.
func (w *Writer) GetAttr(ino uint64) (Attr, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.cur.get(ino); n != nil {
		return n.attr(), nil
	}
	if d := w.detached[ino]; d != nil {
		return d.n.attr(), nil
	}
	return Attr{}, ErrNotExist
}

// Lookup finds name in directory parent.
func (w *Writer) Lookup(parent uint64, name string) (Attr, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.cur.lookup(parent, name); n != nil {
		return n.attr(), nil
	}
	return Attr{}, ErrNotExist
}

// ReadDir lists directory ino.
func (w *Writer) ReadDir(ino uint64) ([]DirEntry, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.cur.get(ino)
	if n == nil {
		return nil, ErrNotExist
	}
	if !n.isDir() {
		return nil, ErrNotDir
	}
	return w.cur.children(ino), nil
}

// Readlink returns a symlink's target.
func (w *Writer) Readlink(ino uint64) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.cur.get(ino)
	if n == nil || !n.isLink() {
		return "", ErrInvalid
	}
	return n.Target, nil
}

// Read reads from a regular file.
func (w *Writer) Read(ino uint64, off int64, buf []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.cur.get(ino)
	if n == nil {
		if d := w.detached[ino]; d != nil {
			return d.read(off, buf)
		}
		return 0, ErrNotExist
	}
	if !n.isReg() {
		return 0, ErrIsDir
	}
	return w.readData(n, off, buf)
}

// newChild checks that name can be created in parent.
func (w *Writer) newChild(parent uint64, name string) error {
	if err := w.usable(); err != nil {
		return err
	}
	p := w.cur.get(parent)
	switch {
	case p == nil:
		return ErrNotExist
	case !p.isDir():
		return ErrNotDir
	case !validName(name):
		return fmt.Errorf("%w: bad file name %q", ErrInvalid, name)
	case w.cur.lookup(parent, name) != nil:
		return ErrExist
	}
	return nil
}

func (w *Writer) create(parent uint64, name string, mode, uid, gid uint32, target string) (Attr, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.newChild(parent, name); err != nil {
		return Attr{}, err
	}
	if len(target) > maxTarget {
		return Attr{}, fmt.Errorf("%w: symlink target longer than %d bytes", ErrInvalid, maxTarget)
	}
	t := now()
	n := &node{Ino: w.nextIno, Parent: parent, Name: name, Mode: mode, Uid: uid, Gid: gid,
		Atime: t, Mtime: t, Ctime: t, Target: target}
	bt := newBatch(w.seq + 1)
	bt.meta(n)
	if err := w.touchDir(bt, parent, t); err != nil {
		return Attr{}, err
	}
	if err := w.commitBatch(bt); err != nil {
		return Attr{}, err
	}
	return w.cur.get(n.Ino).attr(), nil
}

// touchDir records a directory's mtime change in bt.
func (w *Writer) touchDir(bt *batch, dir uint64, t int64) error {
	d := w.cur.get(dir)
	if d == nil {
		return ErrNotExist
	}
	c := *d
	c.Mtime, c.Ctime = t, t
	bt.meta(&c)
	return nil
}

// Mkdir creates a directory.
func (w *Writer) Mkdir(parent uint64, name string, mode, uid, gid uint32) (Attr, error) {
	return w.create(parent, name, syscall.S_IFDIR|mode&0o7777, uid, gid, "")
}

// Create creates an empty regular file.
func (w *Writer) Create(parent uint64, name string, mode, uid, gid uint32) (Attr, error) {
	return w.create(parent, name, syscall.S_IFREG|mode&0o7777, uid, gid, "")
}

// Symlink creates a symbolic link.
func (w *Writer) Symlink(parent uint64, name, target string, uid, gid uint32) (Attr, error) {
	return w.create(parent, name, syscall.S_IFLNK|0o777, uid, gid, target)
}

func (w *Writer) remove(parent uint64, name string, dir bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	n := w.cur.lookup(parent, name)
	switch {
	case n == nil:
		return ErrNotExist
	case dir && !n.isDir():
		return ErrNotDir
	case !dir && n.isDir():
		return ErrIsDir
	case dir && len(w.cur.kids[n.Ino]) > 0:
		return ErrNotEmpty
	}
	if err := w.detach(n); err != nil {
		return err
	}
	bt := newBatch(w.seq + 1)
	bt.del(n.Ino)
	if err := w.touchDir(bt, parent, now()); err != nil {
		return err
	}
	return w.commitBatch(bt)
}

// Unlink removes a file or symlink.
func (w *Writer) Unlink(parent uint64, name string) error { return w.remove(parent, name, false) }

// Rmdir removes an empty directory.
func (w *Writer) Rmdir(parent uint64, name string) error { return w.remove(parent, name, true) }

// Rename moves parent/name to newParent/newName, replacing a compatible target unless
// noReplace is set.
func (w *Writer) Rename(parent uint64, name string, newParent uint64, newName string, noReplace bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	src := w.cur.lookup(parent, name)
	np := w.cur.get(newParent)
	switch {
	case src == nil || np == nil:
		return ErrNotExist
	case !np.isDir():
		return ErrNotDir
	case !validName(newName):
		return fmt.Errorf("%w: bad file name %q", ErrInvalid, newName)
	}
	if parent == newParent && name == newName {
		return nil
	}
	if src.isDir() { // no moving a directory below itself
		for a := newParent; a != 0; a = w.cur.get(a).Parent {
			if a == src.Ino {
				return fmt.Errorf("%w: cannot move a directory into itself", ErrInvalid)
			}
		}
	}
	bt := newBatch(w.seq + 1)
	if dst := w.cur.lookup(newParent, newName); dst != nil {
		switch {
		case noReplace:
			return ErrExist
		case src.isDir() && !dst.isDir():
			return ErrNotDir
		case !src.isDir() && dst.isDir():
			return ErrIsDir
		case dst.isDir() && len(w.cur.kids[dst.Ino]) > 0:
			return ErrNotEmpty
		}
		if err := w.detach(dst); err != nil {
			return err
		}
		bt.del(dst.Ino)
	}
	t := now()
	moved := *src
	moved.Parent, moved.Name, moved.Ctime = newParent, newName, t
	bt.meta(&moved)
	w.touchDir(bt, parent, t)
	if newParent != parent {
		w.touchDir(bt, newParent, t)
	}
	return w.commitBatch(bt)
}

// SetAttr changes permissions, owner, size and times.
func (w *Writer) SetAttr(ino uint64, s SetAttr) (Attr, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return Attr{}, err
	}
	n := w.cur.get(ino)
	if n == nil {
		if d := w.detached[ino]; d != nil {
			return d.setAttr(s)
		}
		return Attr{}, ErrNotExist
	}
	t := now()
	bt := newBatch(w.seq + 1)
	if s.Size != nil {
		if !n.isReg() {
			return Attr{}, ErrIsDir
		}
		if *s.Size > w.maxFileSize() {
			return Attr{}, fmt.Errorf("%w: %d bytes (at most %d)", ErrFileTooBig, *s.Size, w.maxFileSize())
		}
		bt.trunc(ino, *s.Size, t)
	}
	m := *n
	m.Ctime = t
	if s.Size != nil {
		m.Mtime = t
	}
	if s.Mode != nil {
		m.Mode = m.Mode&syscall.S_IFMT | *s.Mode&0o7777
	}
	if s.Uid != nil {
		m.Uid = *s.Uid
	}
	if s.Gid != nil {
		m.Gid = *s.Gid
	}
	if s.Atime != nil {
		m.Atime = *s.Atime
	}
	if s.Mtime != nil {
		m.Mtime = *s.Mtime
	}
	bt.meta(&m)
	if err := w.commitBatch(bt); err != nil {
		return Attr{}, err
	}
	return w.cur.get(ino).attr(), nil
}

// maxWriteChunk bounds one journal record's payload.
const maxWriteChunk = 256 << 10

// Write writes data at off into a regular file. The bytes go to the journal first, so the
// write survives a crash of the writer once Write returns.
func (w *Writer) Write(ino uint64, off int64, data []byte) (int, error) {
	done := 0
	for done < len(data) || len(data) == 0 {
		chunk := data[done:min(len(data), done+maxWriteChunk)]
		if err := w.writeChunk(ino, off+int64(done), chunk); err != nil {
			return done, err
		}
		done += len(chunk)
		if len(data) == 0 {
			break
		}
	}
	return done, nil
}

func (w *Writer) writeChunk(ino uint64, off int64, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	n := w.cur.get(ino)
	if d := w.detached[ino]; n == nil && d != nil {
		_, err := d.write(off, data)
		return err
	}
	switch {
	case n == nil:
		return ErrNotExist
	case !n.isReg():
		return ErrIsDir
	case off < 0:
		return fmt.Errorf("%w: write offset %d out of range", ErrInvalid, off)
	case uint64(off)+uint64(len(data)) > w.maxFileSize():
		return fmt.Errorf("%w: write ends at %d bytes (at most %d)", ErrFileTooBig, uint64(off)+uint64(len(data)), w.maxFileSize())
	case len(data) == 0:
		return nil
	case w.j.size+int64(len(data)) > w.opts.MaxPending:
		return fmt.Errorf("%w: pending buffer is full (%d bytes); wait for epochs to drain it", ErrNoSpace, w.j.size)
	}
	C := int64(w.be.g.C)
	end := off + int64(len(data))
	bt := newBatch(w.seq + 1)
	for idx := off / C; idx <= (end-1)/C && idx < int64(len(n.Frags)); idx++ {
		r := n.Frags[idx]
		if r.isHole() || w.pend[fragKey{ino, uint32(idx)}] != nil {
			continue
		}
		fs := idx * C
		if max(off, fs) == fs && min(end, fs+C)-fs >= int64(r.Valid) {
			continue // the write covers every stored byte: no base needed
		}
		base, err := w.be.fragment(r, ino, uint32(idx), w.sb)
		if err != nil {
			return err
		}
		bt.image(ino, uint32(idx), base)
	}
	bt.write(ino, uint64(off), now(), data)
	if err := w.commitBatch(bt); err != nil {
		return err
	}
	for idx := off / C; idx <= (end-1)/C; idx++ {
		if err := w.compact(n, uint32(idx)); err != nil {
			return err
		}
	}
	return nil
}

// StatFS reports capacity, use and the pending buffer.
func (w *Writer) StatFS() StatFS {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats()
	return StatFS{Capacity: st.Capacity, Used: st.Used, Pending: st.PendingBytes, Inodes: uint64(len(w.cur.nodes))}
}
