package storeserver

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// On-disk record formats (docs/formats/store-records.md). All integers big-endian; every
// record starts with a version byte.
const recordVersion = 1

// errRecord is a record that does not decode: metadata corruption, reported by fsck.
var errRecord = errors.New("bad metadata record")

const (
	kindFile = 1
	kindDir  = 2
)

// entry is the value of a namespace key: a file pointing at a blob, or a directory.
type entry struct {
	kind    byte
	size    int64
	modTime int64 // Unix nanoseconds
	hash    [32]byte
}

const (
	fileRecordLen = 1 + 1 + 8 + 8 + 32
	dirRecordLen  = 1 + 1 + 8 + 8
)

func (e entry) isDir() bool { return e.kind == kindDir }

func (e entry) marshal() []byte {
	n := dirRecordLen
	if e.kind == kindFile {
		n = fileRecordLen
	}
	b := make([]byte, n)
	b[0], b[1] = recordVersion, e.kind
	binary.BigEndian.PutUint64(b[2:], uint64(e.size))
	binary.BigEndian.PutUint64(b[10:], uint64(e.modTime))
	if e.kind == kindFile {
		copy(b[18:], e.hash[:])
	}
	return b
}

func parseEntry(b []byte) (entry, error) {
	if len(b) < dirRecordLen || b[0] != recordVersion {
		return entry{}, fmt.Errorf("%w: entry of %d bytes, version %v", errRecord, len(b), first(b))
	}
	e := entry{kind: b[1], size: int64(binary.BigEndian.Uint64(b[2:])), modTime: int64(binary.BigEndian.Uint64(b[10:]))}
	switch {
	case e.kind == kindFile && len(b) == fileRecordLen && e.size >= 0:
		copy(e.hash[:], b[18:])
	case e.kind == kindDir && len(b) == dirRecordLen && e.size == 0:
	default:
		return entry{}, fmt.Errorf("%w: entry kind %d, %d bytes, size %d", errRecord, e.kind, len(b), e.size)
	}
	return e, nil
}

// blobRec is the value of a blob's hash in the blobs bucket. An inline blob's content is
// in the data bucket of the database itself, under the big-endian dataID (a sequence
// number, so new content is appended to the bucket's last pages); others are in the blob
// store, under the name their key gives them (blobID).
type blobRec struct {
	inline bool
	size   int64
	refs   int64
	dataID uint64 // inline only; 0 otherwise
	// key names the content's copy in the blob store (blobID.key): in a bbolt record of
	// version 2 (session 15); 0 (by hash alone) in a record of version 1 and inline.
	key int64
}

const (
	blobRecordLen      = 1 + 1 + 8 + 8 + 8
	blobRecordKeyedLen = blobRecordLen + 8
	blobRecordKeyed    = 2 // the version of a record with a key
)

const flagInline = 1

func (r blobRec) marshal() []byte {
	n, v := blobRecordLen, byte(recordVersion)
	if r.key != 0 {
		n, v = blobRecordKeyedLen, blobRecordKeyed
	}
	b := make([]byte, n)
	b[0] = v
	if r.inline {
		b[1] = flagInline
	}
	binary.BigEndian.PutUint64(b[2:], uint64(r.size))
	binary.BigEndian.PutUint64(b[10:], uint64(r.refs))
	binary.BigEndian.PutUint64(b[18:], r.dataID)
	if r.key != 0 {
		binary.BigEndian.PutUint64(b[26:], uint64(r.key))
	}
	return b
}

func parseBlobRec(b []byte) (blobRec, error) {
	keyed := len(b) == blobRecordKeyedLen && b[0] == blobRecordKeyed
	if !keyed && (len(b) != blobRecordLen || b[0] != recordVersion) || b[1]&^flagInline != 0 {
		return blobRec{}, fmt.Errorf("%w: blob record of %d bytes, version %v", errRecord, len(b), first(b))
	}
	r := blobRec{inline: b[1] == flagInline, size: int64(binary.BigEndian.Uint64(b[2:])),
		refs: int64(binary.BigEndian.Uint64(b[10:])), dataID: binary.BigEndian.Uint64(b[18:])}
	if keyed {
		r.key = int64(binary.BigEndian.Uint64(b[26:]))
	}
	if r.size < 0 || r.refs < 0 || r.inline && (r.size > InlineMax || r.dataID == 0) || !r.inline && r.dataID != 0 ||
		keyed && (r.key <= 0 || r.inline) {
		return blobRec{}, fmt.Errorf("%w: blob record size %d refs %d inline %v data %d key %d", errRecord, r.size, r.refs, r.inline, r.dataID, r.key)
	}
	return r, nil
}

func dataKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// userRec is the value of a user name in the users bucket.
type userRec struct {
	admin      bool
	secretHash [32]byte // SHA-256 of the user's secret
	quota      int64    // logical bytes allowed; 0 means no quota
	used       int64    // logical bytes stored
	created    int64    // Unix seconds
}

const userRecordLen = 1 + 1 + 32 + 8 + 8 + 8

func (u userRec) marshal() []byte {
	b := make([]byte, userRecordLen)
	b[0] = recordVersion
	if u.admin {
		b[1] = 1
	}
	copy(b[2:], u.secretHash[:])
	binary.BigEndian.PutUint64(b[34:], uint64(u.quota))
	binary.BigEndian.PutUint64(b[42:], uint64(u.used))
	binary.BigEndian.PutUint64(b[50:], uint64(u.created))
	return b
}

func parseUserRec(b []byte) (userRec, error) {
	if len(b) != userRecordLen || b[0] != recordVersion || b[1] > 1 {
		return userRec{}, fmt.Errorf("%w: user record of %d bytes, version %v", errRecord, len(b), first(b))
	}
	u := userRec{admin: b[1] == 1}
	copy(u.secretHash[:], b[2:34])
	u.quota = int64(binary.BigEndian.Uint64(b[34:]))
	u.used = int64(binary.BigEndian.Uint64(b[42:]))
	u.created = int64(binary.BigEndian.Uint64(b[50:]))
	if u.quota < 0 || u.used < 0 {
		return userRec{}, fmt.Errorf("%w: user record quota %d used %d", errRecord, u.quota, u.used)
	}
	return u, nil
}

func first(b []byte) any {
	if len(b) == 0 {
		return "none"
	}
	return b[0]
}

// nsKey is the namespace key of dir/name: dir, a NUL, name. NUL never occurs in names, so
// the direct children of dir are exactly the keys with prefix dir+"\x00", in name order.
func nsKey(dir, name string) []byte {
	k := make([]byte, 0, len(dir)+1+len(name))
	k = append(k, dir...)
	k = append(k, 0)
	return append(k, name...)
}

// splitKey is the inverse of nsKey.
func splitKey(k []byte) (dir, name string, err error) {
	for i, c := range k {
		if c == 0 {
			return string(k[:i]), string(k[i+1:]), nil
		}
	}
	return "", "", fmt.Errorf("%w: namespace key without separator", errRecord)
}
