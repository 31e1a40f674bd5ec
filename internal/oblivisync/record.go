package oblivisync

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// node is one inode: a file, directory or symlink. Every inode has exactly one parent
// (no hard links), so the directory tree is the set of (Parent, Name) pairs.
type node struct {
	Ino, Parent         uint64
	Name                string
	Mode                uint32 // type bits | permissions
	Uid, Gid            uint32
	Size                uint64
	Atime, Mtime, Ctime int64 // unix nanoseconds
	Target              string
	Frags               []ref // one per C bytes of Size (regular files)
	// Ver identifies the version of the content (Size and Frags) in committed records:
	// the epoch that committed it. A record committed again with the same content keeps
	// it; any other change of Size or Frags gets the committing epoch. 0: unknown (a
	// record from a version 1 page). Stored in pages only (page version 2), not in the
	// journal or checkpoint, and not compared by markIfDirty (appendNode omits it).
	Ver uint64
}

const (
	pageVersion   = 2 // written; version 1 pages (records without Ver) are still read
	pageVersionV1 = 1
	maxNameLen    = 255
	maxTarget     = 4095
	recFixed      = 8 + 8 + 4 + 4 + 4 + 8 + 8 + 8 + 8 + 2 + 2 + 4
)

func (n *node) isDir() bool  { return n.Mode&syscall.S_IFMT == syscall.S_IFDIR }
func (n *node) isReg() bool  { return n.Mode&syscall.S_IFMT == syscall.S_IFREG }
func (n *node) isLink() bool { return n.Mode&syscall.S_IFMT == syscall.S_IFLNK }

func (n *node) clone() *node {
	c := *n
	c.Frags = append([]ref(nil), n.Frags...)
	return &c
}

func appendNode(b []byte, n *node) []byte {
	b = binary.BigEndian.AppendUint64(b, n.Ino)
	b = binary.BigEndian.AppendUint64(b, n.Parent)
	b = binary.BigEndian.AppendUint32(b, n.Mode)
	b = binary.BigEndian.AppendUint32(b, n.Uid)
	b = binary.BigEndian.AppendUint32(b, n.Gid)
	b = binary.BigEndian.AppendUint64(b, n.Size)
	b = binary.BigEndian.AppendUint64(b, uint64(n.Atime))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Mtime))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Ctime))
	b = binary.BigEndian.AppendUint16(b, uint16(len(n.Name)))
	b = append(b, n.Name...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(n.Target)))
	b = append(b, n.Target...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(n.Frags)))
	for _, r := range n.Frags {
		b = appendRef(b, r)
	}
	return b
}

// decodeNode parses one record and returns it with the bytes consumed.
func decodeNode(b []byte, g geometry, nfiles int) (*node, int, error) {
	if len(b) < recFixed {
		return nil, 0, fmt.Errorf("%w: truncated inode record", ErrFormat)
	}
	n := &node{}
	be := binary.BigEndian
	n.Ino, n.Parent = be.Uint64(b), be.Uint64(b[8:])
	n.Mode, n.Uid, n.Gid = be.Uint32(b[16:]), be.Uint32(b[20:]), be.Uint32(b[24:])
	n.Size = be.Uint64(b[28:])
	n.Atime, n.Mtime, n.Ctime = int64(be.Uint64(b[36:])), int64(be.Uint64(b[44:])), int64(be.Uint64(b[52:]))
	p := 60
	nl := int(be.Uint16(b[p:]))
	p += 2
	if nl > maxNameLen || len(b) < p+nl+2 {
		return nil, 0, fmt.Errorf("%w: inode %d: bad name length %d", ErrFormat, n.Ino, nl)
	}
	n.Name = string(b[p : p+nl])
	p += nl
	tl := int(be.Uint16(b[p:]))
	p += 2
	if tl > maxTarget || len(b) < p+tl+4 {
		return nil, 0, fmt.Errorf("%w: inode %d: bad symlink target length %d", ErrFormat, n.Ino, tl)
	}
	n.Target = string(b[p : p+tl])
	p += tl
	nf := int(be.Uint32(b[p:]))
	p += 4
	if nf > (len(b)-p)/refLen {
		return nil, 0, fmt.Errorf("%w: inode %d: %d fragments do not fit the record", ErrFormat, n.Ino, nf)
	}
	if n.isReg() && n.Size > fileSizeLimit(g, nfiles) {
		return nil, 0, fmt.Errorf("%w: inode %d: size %d exceeds the backend's capacity", ErrFormat, n.Ino, n.Size)
	}
	if want := fragCount(n.Size, g.C); n.isReg() && nf != want {
		return nil, 0, fmt.Errorf("%w: inode %d: %d fragments for size %d, want %d", ErrFormat, n.Ino, nf, n.Size, want)
	}
	n.Frags = make([]ref, nf)
	for i := range n.Frags {
		r := decodeRef(b[p:])
		if err := r.check(g, nfiles); err != nil {
			return nil, 0, fmt.Errorf("inode %d fragment %d: %w", n.Ino, i, err)
		}
		n.Frags[i] = r
		p += refLen
	}
	switch {
	case n.Ino < rootIno || (n.Ino == rootIno) != (n.Parent == 0) || n.Ino&pageObjBit != 0:
		return nil, 0, fmt.Errorf("%w: inode %d: bad inode or parent number", ErrFormat, n.Ino)
	case !n.isDir() && !n.isReg() && !n.isLink():
		return nil, 0, fmt.Errorf("%w: inode %d: unsupported file type %o", ErrFormat, n.Ino, n.Mode&syscall.S_IFMT)
	case n.Ino != rootIno && !validName(n.Name):
		return nil, 0, fmt.Errorf("%w: inode %d: invalid name", ErrFormat, n.Ino)
	}
	return n, p, nil
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == 0 {
			return false
		}
	}
	return true
}

func fragCount(size uint64, c int) int { return int((size + uint64(c) - 1) / uint64(c)) }

// encodePage serialises the records of page p (nodes sorted by inode number), in the
// current page version.
func encodePage(p uint32, nodes []*node) []byte { return encodePageV(pageVersion, p, nodes) }

// encodePageV serialises a page in the given version (1 only for test vectors): a
// version 2 record is the version 1 record followed by its Ver.
func encodePageV(v byte, p uint32, nodes []*node) []byte {
	b := []byte{v}
	b = binary.BigEndian.AppendUint32(b, p)
	b = binary.BigEndian.AppendUint32(b, uint32(len(nodes)))
	for _, n := range nodes {
		b = appendNode(b, n)
		if v >= 2 {
			b = binary.BigEndian.AppendUint64(b, n.Ver)
		}
	}
	return b
}

// decodePage parses a metadata page (version 1 or 2) and checks every record belongs to
// page p.
func decodePage(p uint32, b []byte, g geometry, nfiles int) ([]*node, error) {
	if len(b) < 9 || (b[0] != pageVersion && b[0] != pageVersionV1) {
		return nil, fmt.Errorf("%w: metadata page %d: bad header", ErrFormat, p)
	}
	v2 := b[0] == pageVersion
	if got := binary.BigEndian.Uint32(b[1:]); got != p {
		return nil, fmt.Errorf("%w: metadata page %d claims to be page %d", ErrIntegrity, p, got)
	}
	count := int(binary.BigEndian.Uint32(b[5:]))
	if count > inodesPerPage {
		return nil, fmt.Errorf("%w: metadata page %d: %d records", ErrFormat, p, count)
	}
	b = b[9:]
	out := make([]*node, 0, count)
	var last uint64
	for i := 0; i < count; i++ {
		n, used, err := decodeNode(b, g, nfiles)
		if err != nil {
			return nil, fmt.Errorf("metadata page %d: %w", p, err)
		}
		if v2 {
			if len(b) < used+8 {
				return nil, fmt.Errorf("%w: metadata page %d: inode %d: truncated record", ErrFormat, p, n.Ino)
			}
			n.Ver = binary.BigEndian.Uint64(b[used:])
			used += 8
		}
		if pageOf(n.Ino) != p || (i > 0 && n.Ino <= last) {
			return nil, fmt.Errorf("%w: metadata page %d: inode %d out of place", ErrFormat, p, n.Ino)
		}
		last = n.Ino
		out = append(out, n)
		b = b[used:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: metadata page %d: %d trailing bytes", ErrFormat, p, len(b))
	}
	return out, nil
}
