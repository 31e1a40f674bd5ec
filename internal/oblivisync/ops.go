package oblivisync

import (
	"encoding/binary"
	"fmt"
)

// Journal operations. A journal record's plaintext is `seq u64 | op*`; each op starts with
// its type byte. Live changes and crash replay go through the same decode + apply code.
const (
	opMeta  = 1 // ino u64 | parent u64 | mode u32 | uid u32 | gid u32 | atime | mtime | ctime (i64) | nameLen u16 | name | targetLen u16 | target
	opTrunc = 2 // ino u64 | size u64 | ctime i64
	opWrite = 3 // ino u64 | off u64 | mtime i64 | len u32 | data
	opImage = 4 // ino u64 | fragment u32 | len u32 | data (a fragment's full base content)
	opDel   = 5 // ino u64
)

// batch builds one journal record.
type batch struct{ b []byte }

func newBatch(seq uint64) *batch {
	return &batch{b: binary.BigEndian.AppendUint64(make([]byte, 0, 128), seq)}
}

func (bt *batch) meta(n *node) {
	b := append(bt.b, opMeta)
	be := binary.BigEndian
	b = be.AppendUint64(b, n.Ino)
	b = be.AppendUint64(b, n.Parent)
	b = be.AppendUint32(b, n.Mode)
	b = be.AppendUint32(b, n.Uid)
	b = be.AppendUint32(b, n.Gid)
	b = be.AppendUint64(b, uint64(n.Atime))
	b = be.AppendUint64(b, uint64(n.Mtime))
	b = be.AppendUint64(b, uint64(n.Ctime))
	b = be.AppendUint16(b, uint16(len(n.Name)))
	b = append(b, n.Name...)
	b = be.AppendUint16(b, uint16(len(n.Target)))
	bt.b = append(b, n.Target...)
}

func (bt *batch) trunc(ino, size uint64, ctime int64) {
	b := append(bt.b, opTrunc)
	b = binary.BigEndian.AppendUint64(b, ino)
	b = binary.BigEndian.AppendUint64(b, size)
	bt.b = binary.BigEndian.AppendUint64(b, uint64(ctime))
}

func (bt *batch) write(ino, off uint64, mtime int64, data []byte) {
	b := append(bt.b, opWrite)
	b = binary.BigEndian.AppendUint64(b, ino)
	b = binary.BigEndian.AppendUint64(b, off)
	b = binary.BigEndian.AppendUint64(b, uint64(mtime))
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	bt.b = append(b, data...)
}

func (bt *batch) image(ino uint64, idx uint32, data []byte) {
	b := append(bt.b, opImage)
	b = binary.BigEndian.AppendUint64(b, ino)
	b = binary.BigEndian.AppendUint32(b, idx)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	bt.b = append(b, data...)
}

func (bt *batch) del(ino uint64) {
	bt.b = binary.BigEndian.AppendUint64(append(bt.b, opDel), ino)
}

// op is one decoded operation; for opWrite/opImage, Data is the payload and DataOff its
// offset in the record plaintext (the extent points there, not at a copy).
type op struct {
	Type    byte
	Node    node // opMeta fields
	Ino     uint64
	Off     uint64 // opWrite offset, opTrunc size
	Time    int64
	Idx     uint32
	Data    []byte
	DataOff int
}

// decodeOps parses a record plaintext.
func decodeOps(plain []byte) (uint64, []op, error) {
	if len(plain) < 8 {
		return 0, nil, fmt.Errorf("%w: journal record too short", ErrFormat)
	}
	be := binary.BigEndian
	seq := be.Uint64(plain)
	p := 8
	var ops []op
	need := func(n int) error {
		if len(plain)-p < n {
			return fmt.Errorf("%w: truncated journal operation", ErrFormat)
		}
		return nil
	}
	for p < len(plain) {
		o := op{Type: plain[p]}
		p++
		switch o.Type {
		case opMeta:
			if err := need(52); err != nil {
				return 0, nil, err
			}
			n := &o.Node
			n.Ino, n.Parent = be.Uint64(plain[p:]), be.Uint64(plain[p+8:])
			n.Mode, n.Uid, n.Gid = be.Uint32(plain[p+16:]), be.Uint32(plain[p+20:]), be.Uint32(plain[p+24:])
			n.Atime, n.Mtime, n.Ctime = int64(be.Uint64(plain[p+28:])), int64(be.Uint64(plain[p+36:])), int64(be.Uint64(plain[p+44:]))
			p += 52
			for _, s := range []*string{&n.Name, &n.Target} {
				if err := need(2); err != nil {
					return 0, nil, err
				}
				l := int(be.Uint16(plain[p:]))
				p += 2
				if err := need(l); err != nil {
					return 0, nil, err
				}
				*s = string(plain[p : p+l])
				p += l
			}
			o.Ino = n.Ino
		case opTrunc:
			if err := need(24); err != nil {
				return 0, nil, err
			}
			o.Ino, o.Off, o.Time = be.Uint64(plain[p:]), be.Uint64(plain[p+8:]), int64(be.Uint64(plain[p+16:]))
			p += 24
		case opWrite, opImage:
			hdr := 28
			if o.Type == opImage {
				hdr = 16
			}
			if err := need(hdr); err != nil {
				return 0, nil, err
			}
			o.Ino = be.Uint64(plain[p:])
			if o.Type == opWrite {
				o.Off, o.Time = be.Uint64(plain[p+8:]), int64(be.Uint64(plain[p+16:]))
			} else {
				o.Idx = be.Uint32(plain[p+8:])
			}
			l := int(be.Uint32(plain[p+hdr-4:]))
			p += hdr
			if err := need(l); err != nil {
				return 0, nil, err
			}
			o.Data, o.DataOff = plain[p:p+l], p
			p += l
		case opDel:
			if err := need(8); err != nil {
				return 0, nil, err
			}
			o.Ino = be.Uint64(plain[p:])
			p += 8
		default:
			return 0, nil, fmt.Errorf("%w: unknown journal operation %d", ErrFormat, o.Type)
		}
		ops = append(ops, o)
	}
	return seq, ops, nil
}
