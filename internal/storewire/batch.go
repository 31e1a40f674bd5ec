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
// Version 3 has the same layout and one more flag, 0x02 absent (storage.Object.Absent:
// a condition only, no object of that name may exist; its size is 0 and it is not also a
// create). It is sent when some object is absent.
//
// Version 4 adds the flag 0x04 match (storage.Object.Match: the object is stored only if
// a file is stored under its name now whose content's SHA-256 is the one given; not with
// create or absent), followed by that SHA-256. It is sent when some object has a match:
//
//	version (1) = 0x04 | count (2) | count objects
//	object: flags (1) | [SHA-256 (32), when flags is 0x04] | path length (2) | path | size (4) | size bytes
//
// big-endian, nothing after the last object. A version 2 body without a create flag, a
// version 3 body without an absent flag, or a version 4 body without a match flag, is not
// canonical (a lower version says the same) and is refused.

// BatchVersion is the first byte of a batch body without conditions; BatchVersionCond of
// one with some.
// BatchVersionAbsent is the first byte of one with some absent condition, and
// BatchVersionMatch of one with some match condition.
const (
	BatchVersion       = 0x01
	BatchVersionCond   = 0x02
	BatchVersionAbsent = 0x03
	BatchVersionMatch  = 0x04
)

// flagCreate marks a version 2 or later object that must not exist yet; flagAbsent a
// version 3 or 4 object that is only a condition (no object of that name may exist);
// flagMatch a version 4 object stored only over a file of the given content (its SHA-256
// follows the flags byte).
const (
	flagCreate = 0x01
	flagAbsent = 0x02
	flagMatch  = 0x04
)

// ErrBadBatch is a batch body that does not parse (400 bad_request).
var ErrBadBatch = errors.New("malformed batch body")

// AppendBatch appends the batch encoding of objs to b, in the lowest version that says
// it: version 4 when some object has a match condition, else version 3 when some is an
// absent condition, else version 2 when some is a create, else version 1. (An object with
// more than one condition, which storage.CheckBatch refuses, is encoded with all its
// flags, which ReadBatch refuses.)
func AppendBatch(b []byte, objs []storage.Object) []byte {
	v := BatchVersionFor(objs)
	b = append(b, v)
	b = binary.BigEndian.AppendUint16(b, uint16(len(objs)))
	for _, o := range objs {
		if v != BatchVersion {
			f := byte(0)
			if o.Create {
				f |= flagCreate
			}
			if o.Absent {
				f |= flagAbsent
			}
			if o.Match != nil {
				f |= flagMatch
			}
			b = append(b, f)
			if o.Match != nil {
				b = append(b, o.Match[:]...)
			}
		}
		p := storage.Join(o.Dir, o.Name)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(o.Data)))
		b = append(b, o.Data...)
	}
	return b
}

// BatchVersionFor is the version AppendBatch encodes objs in: the lowest that can express
// them, so a batch without a newer condition is still taken by an older service.
func BatchVersionFor(objs []storage.Object) byte {
	v := byte(BatchVersion)
	for _, o := range objs {
		switch {
		case o.Match != nil:
			v = BatchVersionMatch
		case o.Absent && v < BatchVersionAbsent:
			v = BatchVersionAbsent
		case o.Create && v < BatchVersionCond:
			v = BatchVersionCond
		}
	}
	return v
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
	v := hdr[0]
	if v < BatchVersion || v > BatchVersionMatch {
		return nil, fmt.Errorf("%w: version %d, want %d to %d", ErrBadBatch, v, BatchVersion, BatchVersionMatch)
	}
	n := int(binary.BigEndian.Uint16(hdr[1:]))
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: no objects", ErrBadBatch)
	case n > l.Objects:
		return nil, fmt.Errorf("%w: batch of %d objects, at most %d", ErrLimit, n, l.Objects)
	}
	objs := make([]storage.Object, 0, n)
	var total int64
	creates, absents, matches := false, false, false
	for i := 0; i < n; i++ {
		o, err := readBatchObject(br, l, i, v, l.Bytes-total)
		if err != nil {
			return nil, err
		}
		total += int64(len(o.Data))
		objs = append(objs, o)
		creates, absents, matches = creates || o.Create, absents || o.Absent, matches || o.Match != nil
	}
	if v == BatchVersionCond && !creates {
		return nil, fmt.Errorf("%w: version %d without a conditional object (send version %d)", ErrBadBatch, BatchVersionCond, BatchVersion)
	}
	if v == BatchVersionAbsent && !absents {
		return nil, fmt.Errorf("%w: version %d without an absent condition (send a lower version)", ErrBadBatch, BatchVersionAbsent)
	}
	if v == BatchVersionMatch && !matches {
		return nil, fmt.Errorf("%w: version %d without a match condition (send a lower version)", ErrBadBatch, BatchVersionMatch)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err == nil {
			return nil, fmt.Errorf("%w: bytes after the last object", ErrBadBatch)
		}
		return nil, fmt.Errorf("%w: after the last object: %w", ErrBadBatch, err)
	}
	return objs, nil
}

// readBatchObject reads object i; room is what the batch's content may still take. A
// size over it is refused before anything is allocated for it: what a request makes the
// server hold is bounded by the content it may send (l.Bytes), not by sizes it declares.
func readBatchObject(br *bufio.Reader, l BatchLimits, i int, v byte, room int64) (storage.Object, error) {
	var o storage.Object
	var b [4]byte
	if v != BatchVersion {
		f, err := br.ReadByte()
		if err != nil {
			return o, fmt.Errorf("%w: object %d: %w", ErrBadBatch, i, err)
		}
		known := byte(flagCreate)
		if v >= BatchVersionAbsent {
			known |= flagAbsent
		}
		if v >= BatchVersionMatch {
			known |= flagMatch
		}
		if f&^known != 0 || f&(f-1) != 0 { // an unknown bit, or more than one condition
			return o, fmt.Errorf("%w: object %d: flags %#x", ErrBadBatch, i, f)
		}
		o.Create, o.Absent = f == flagCreate, f == flagAbsent
		if f == flagMatch {
			o.Match = new([32]byte)
			if _, err := io.ReadFull(br, o.Match[:]); err != nil {
				return o, fmt.Errorf("%w: object %d: %w", ErrBadBatch, i, err)
			}
		}
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
	if o.Absent && size != 0 {
		return o, fmt.Errorf("%w: object %d: an absent condition with %d bytes of content", ErrBadBatch, i, size)
	}
	if size > l.ObjectSize {
		return o, fmt.Errorf("batch object %d: %d bytes, at most %d: %w", i, size, l.ObjectSize, storage.ErrTooLarge)
	}
	if size > room {
		return o, fmt.Errorf("%w: batch of more than %d bytes", ErrLimit, l.Bytes)
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
