package oblivisync

import (
	"fmt"
	"syscall"
)

// commitBatch appends bt to the journal, then applies it: a change is acknowledged only
// once it is in the journal.
func (w *Writer) commitBatch(bt *batch) error {
	seg, off, err := w.j.append(bt.b)
	if err != nil {
		return err
	}
	w.changed = true
	return w.applyRecord(seg, off, bt.b)
}

// applyRecord applies one journal record (live or during replay).
func (w *Writer) applyRecord(seg uint32, off int64, plain []byte) error {
	seq, ops, err := decodeOps(plain)
	if err != nil {
		return err
	}
	w.seq = max(w.seq, seq)
	for i := range ops {
		if err := w.apply(seq, seg, off, &ops[i]); err != nil {
			return err
		}
	}
	return nil
}

func (w *Writer) apply(seq uint64, seg uint32, off int64, o *op) error {
	n := w.cur.get(o.Ino)
	if o.Type != opMeta && n == nil {
		return fmt.Errorf("%w: journal operation %d on missing inode %d", ErrIntegrity, o.Type, o.Ino)
	}
	w.dirty[o.Ino] = true
	C := uint64(w.be.g.C)
	switch o.Type {
	case opMeta:
		nn := o.Node
		if n != nil {
			nn.Size, nn.Frags = n.Size, n.Frags
		}
		if nn.isLink() {
			nn.Size = uint64(len(nn.Target))
		}
		w.cur.put(&nn)
		w.nextIno = max(w.nextIno, o.Ino+1)
	case opTrunc:
		w.truncate(n, o.Off, seq)
		n.Ctime, n.Mtime = o.Time, o.Time
	case opWrite:
		end := o.Off + uint64(len(o.Data))
		if end > n.Size {
			w.truncate(n, end, seq)
		}
		for p := o.Off; p < end; {
			idx := uint32(p / C)
			fs := uint64(idx) * C
			e := min(end, fs+C)
			pf := w.pendFor(n, idx, seq)
			pf.ext = append(pf.ext, extent{off: uint32(p - fs), n: uint32(e - p), seg: seg, rec: off, data: uint32(o.DataOff) + uint32(p-o.Off)})
			p = e
		}
		n.Mtime, n.Ctime = o.Time, o.Time
	case opImage:
		if int(o.Idx) >= len(n.Frags) || len(o.Data) > int(C) {
			return fmt.Errorf("%w: journal image for fragment %d of inode %d out of range", ErrIntegrity, o.Idx, o.Ino)
		}
		pf := w.pendFor(n, o.Idx, seq)
		pf.ext = append(pf.ext[:0], extent{off: 0, n: uint32(len(o.Data)), seg: seg, rec: off, data: uint32(o.DataOff)})
	case opDel:
		for i := range n.Frags {
			w.dropPend(fragKey{o.Ino, uint32(i)})
		}
		w.cur.del(o.Ino)
	}
	return nil
}

// pendFor returns the pending fragment idx of n, creating it (zero base) if needed.
func (w *Writer) pendFor(n *node, idx uint32, seq uint64) *pfrag {
	k := fragKey{n.Ino, idx}
	if pf := w.pend[k]; pf != nil {
		return pf
	}
	pf := &pfrag{seq: seq}
	w.pend[k] = pf
	w.npend[n.Ino]++
	n.Frags[idx] = hole
	return pf
}

func (w *Writer) dropPend(k fragKey) {
	if _, ok := w.pend[k]; ok {
		delete(w.pend, k)
		if w.npend[k.ino]--; w.npend[k.ino] <= 0 {
			delete(w.npend, k.ino)
		}
	}
}

// truncate sets n's size: fragments past the end are dropped, new ones are holes, and
// the bytes of the last fragment past the new end read as zeros.
func (w *Writer) truncate(n *node, size uint64, seq uint64) {
	if !n.isReg() {
		return
	}
	C := uint64(w.be.g.C)
	nf := fragCount(size, int(C))
	for i := nf; i < len(n.Frags); i++ {
		w.dropPend(fragKey{n.Ino, uint32(i)})
	}
	if nf <= len(n.Frags) {
		n.Frags = n.Frags[:nf]
	}
	for len(n.Frags) < nf {
		n.Frags = append(n.Frags, hole)
	}
	if size < n.Size && nf > 0 {
		idx := uint32(nf - 1)
		limit := uint32(size - uint64(idx)*C)
		if pf := w.pend[fragKey{n.Ino, idx}]; pf != nil {
			pf.ext = append(pf.ext, extent{off: limit, n: uint32(C) - limit, seg: zeroSeg})
		} else if r := &n.Frags[idx]; !r.isHole() && r.Valid > limit {
			r.Valid = limit
		}
	}
	n.Size = size
}

// readPending fills dst with bytes [from, from+len(dst)) of a pending fragment.
func (w *Writer) readPending(pf *pfrag, from uint32, dst []byte) error {
	clear(dst)
	to := from + uint32(len(dst))
	for _, e := range pf.ext {
		s, t := max(e.off, from), min(e.off+e.n, to)
		if s >= t {
			continue
		}
		if e.seg == zeroSeg {
			clear(dst[s-from : t-from])
			continue
		}
		plain, err := w.j.record(e.seg, e.rec)
		if err != nil {
			return err
		}
		d := e.data + (s - e.off)
		if int(d)+int(t-s) > len(plain) {
			return fmt.Errorf("%w: journal extent out of range", ErrIntegrity)
		}
		copy(dst[s-from:t-from], plain[d:d+(t-s)])
	}
	return nil
}

// fragLen is the payload length of fragment idx of n.
func (w *Writer) fragLen(n *node, idx uint32) int {
	C := uint64(w.be.g.C)
	return int(min(C, n.Size-uint64(idx)*C))
}

// readData reads file content at off into buf from the current state.
func (w *Writer) readData(n *node, off int64, buf []byte) (int, error) {
	return readFragments(n, off, buf, w.be.g.C, func(idx, from uint32, dst []byte) error {
		if pf := w.pend[fragKey{n.Ino, idx}]; pf != nil {
			return w.readPending(pf, from, dst)
		}
		return readSynced(w.be, n.Frags[idx], n.Ino, idx, w.sb, from, dst)
	})
}

// readFragments splits a read of n at off into per-fragment reads (fragment idx, offset
// within it, destination), bounded by the file size.
func readFragments(n *node, off int64, buf []byte, c int, read func(idx, from uint32, dst []byte) error) (int, error) {
	if off < 0 {
		return 0, ErrInvalid
	}
	if uint64(off) >= n.Size {
		return 0, nil
	}
	buf = buf[:min(uint64(len(buf)), n.Size-uint64(off))]
	C, end := uint64(c), uint64(off)+uint64(len(buf))
	for p := uint64(off); p < end; {
		idx := uint32(p / C)
		fs := uint64(idx) * C
		e := min(end, fs+C)
		if err := read(idx, uint32(p-fs), buf[p-uint64(off):e-uint64(off)]); err != nil {
			return 0, err
		}
		p = e
	}
	return len(buf), nil
}

// readSynced fills dst with bytes [from, ...) of a stored fragment (zeros past Valid).
func readSynced(be *backend, r ref, ino uint64, idx uint32, sb *superblock, from uint32, dst []byte) error {
	clear(dst)
	if r.isHole() || from >= r.Valid {
		return nil
	}
	data, err := be.fragment(r, ino, idx, sb)
	if err != nil {
		return err
	}
	copy(dst, data[from:])
	return nil
}

func (w *Writer) compact(n *node, idx uint32) error {
	pf := w.pend[fragKey{n.Ino, idx}]
	if pf == nil || len(pf.ext) <= maxExtents {
		return nil
	}
	buf := make([]byte, w.fragLen(n, idx))
	if err := w.readPending(pf, 0, buf); err != nil {
		return err
	}
	bt := newBatch(w.seq + 1)
	bt.image(n.Ino, idx, buf)
	return w.commitBatch(bt)
}

var _ = syscall.S_IFREG
