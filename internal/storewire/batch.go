package storewire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/storage"
)

// The body of POST /v1/batch (docs/formats/store-api.md, "Batch upload"):
//
//	version (1) = 0x01 | count (2) | count objects
//	object: path length (2) | path (UTF-8 "dir/name", not escaped) | size (4) | size bytes
//
// or, when some object is conditional (storage.Object.Create), version 2, whose objects
// start with a flags byte (0x01: create, the object must not exist yet; no other bit):
//
//	version (1) = 0x02 | count (2) | count objects
//	object: flags (1) | path length (2) | path | size (4) | size bytes
//
// big-endian, nothing after the last object. A version 2 body without a create flag is
// not canonical (version 1 says the same) and is refused.

// BatchVersion is the first byte of a batch body without conditions; BatchVersionCond of
// one with some.
const (
	BatchVersion     = 0x01
	BatchVersionCond = 0x02
)

// flagCreate marks a version 2 object that must not exist yet.
const flagCreate = 0x01

// ErrBadBatch is a batch body that does not parse (400 bad_request).
var ErrBadBatch = errors.New("malformed batch body")

// AppendBatch appends the batch encoding of objs to b: version 2 when some object is
// conditional, else version 1.
func AppendBatch(b []byte, objs []storage.Object) []byte {
	v := byte(BatchVersion)
	for _, o := range objs {
		if o.Create {
			v = BatchVersionCond
		}
	}
	b = append(b, v)
	b = binary.BigEndian.AppendUint16(b, uint16(len(objs)))
	for _, o := range objs {
		if v == BatchVersionCond {
			f := byte(0)
			if o.Create {
				f = flagCreate
			}
			b = append(b, f)
		}
		p := storage.Join(o.Dir, o.Name)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(o.Data)))
		b = append(b, o.Data...)
	}
	return b
}

// BatchLimits bound what ReadBatch accepts.
type BatchLimits struct {
	Objects    int   // objects per batch
	Bytes      int64 // content bytes per batch
	ObjectSize int64 // bytes per object
	PathLen    int   // bytes per path
}

// ReadBatch parses a batch body from r, which must end (io.EOF) right after the last
// object. It reads at most the limits' worth of content: past one it stops with ErrLimit
// (count, total) or storage.ErrTooLarge (one object). Paths are split and checked
// against storage's name rules (storage.ErrInvalidName); the caller applies its limits. A body cut short wraps the reader's error.
func ReadBatch(r io.Reader, l BatchLimits) ([]storage.Object, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var hdr [3]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrBadBatch, err)
	}
	if v := hdr[0]; v != BatchVersion && v != BatchVersionCond {
		return nil, fmt.Errorf("%w: version %d, want %d or %d", ErrBadBatch, v, BatchVersion, BatchVersionCond)
	}
	cond := hdr[0] == BatchVersionCond
	n := int(binary.BigEndian.Uint16(hdr[1:]))
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: no objects", ErrBadBatch)
	case n > l.Objects:
		return nil, fmt.Errorf("%w: batch of %d objects, at most %d", ErrLimit, n, l.Objects)
	}
	objs := make([]storage.Object, 0, n)
	var total int64
	creates := false
	for i := 0; i < n; i++ {
		o, err := readBatchObject(br, l, i, cond)
		if err != nil {
			return nil, err
		}
		if total += int64(len(o.Data)); total > l.Bytes {
			return nil, fmt.Errorf("%w: batch of more than %d bytes", ErrLimit, l.Bytes)
		}
		objs = append(objs, o)
		creates = creates || o.Create
	}
	if cond && !creates {
		return nil, fmt.Errorf("%w: version %d without a conditional object (send version %d)", ErrBadBatch, BatchVersionCond, BatchVersion)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err == nil {
			return nil, fmt.Errorf("%w: bytes after the last object", ErrBadBatch)
		}
		return nil, fmt.Errorf("%w: after the last object: %w", ErrBadBatch, err)
	}
	return objs, nil
}

func readBatchObject(br *bufio.Reader, l BatchLimits, i int, cond bool) (storage.Object, error) {
	var o storage.Object
	var b [4]byte
	if cond {
		f, err := br.ReadByte()
		if err != nil {
			return o, fmt.Errorf("%w: object %d: %w", ErrBadBatch, i, err)
		}
		if f&^flagCreate != 0 {
			return o, fmt.Errorf("%w: object %d: unknown flags %#x", ErrBadBatch, i, f)
		}
		o.Create = f == flagCreate
	}
	if _, err := io.ReadFull(br, b[:2]); err != nil {
		return o, fmt.Errorf("%w: object %d: %w", ErrBadBatch, i, err)
	}
	pl := int(binary.BigEndian.Uint16(b[:2]))
	if pl == 0 || pl > l.PathLen {
		return o, fmt.Errorf("%w: object %d: path of %d bytes (1 to %d)", ErrLimit, i, pl, l.PathLen)
	}
	path := make([]byte, pl)
	if _, err := io.ReadFull(br, path); err != nil {
		return o, fmt.Errorf("%w: object %d: %w", ErrBadBatch, i, err)
	}
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return o, fmt.Errorf("%w: object %d: %w", ErrBadBatch, i, err)
	}
	size := int64(binary.BigEndian.Uint32(b[:]))
	if size > l.ObjectSize {
		return o, fmt.Errorf("batch object %d: %d bytes, at most %d: %w", i, size, l.ObjectSize, storage.ErrTooLarge)
	}
	o.Data = make([]byte, size)
	if _, err := io.ReadFull(br, o.Data); err != nil {
		return o, fmt.Errorf("%w: object %d: %w", ErrBadBatch, i, err)
	}
	o.Dir, o.Name = storage.Split(string(path))
	if err := storage.CheckPath(o.Dir, o.Name); err != nil {
		return o, fmt.Errorf("batch object %d: %w", i, err)
	}
	if storage.Join(o.Dir, o.Name) != string(path) { // a leading '/': not canonical
		return o, fmt.Errorf("batch object %d: path %.64q is not canonical: %w", i, path, storage.ErrInvalidName)
	}
	return o, nil
}
