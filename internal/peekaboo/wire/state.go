package wire

import "fmt"

// Record types of the servers' bbolt values (docs/formats/peekaboo-state.md).
const (
	RecKey  = 0x40 // K-server: bucket "keys", id -> KeyRecord
	RecPair = 0x41 // V-server: bucket "pairs", id -> PairRecord
	RecUser = 0x42 // V-server: bucket "users", name -> UserRecord
)

// MarshalKeyRecord encodes the K-server's record of a pair (key and pseudonyms).
func MarshalKeyRecord(it *KeyItem) []byte {
	w := newMsg(RecKey)
	w.b16([]byte(it.Key))
	w.u8(uint8(len(it.Pseudonyms)))
	for _, p := range it.Pseudonyms {
		w.raw(p[:])
	}
	return w.b
}

func ParseKeyRecord(id ID, b []byte) (*KeyItem, error) {
	r := newReader("key record", b)
	r.header(RecKey)
	it := &KeyItem{ID: id, Key: string(r.b16("key"))}
	n := int(r.u8("pseudonyms"))
	for i := 0; i < n && r.err == nil; i++ {
		var p [32]byte
		copy(p[:], r.take(32, "pseudonym"))
		it.Pseudonyms = append(it.Pseudonyms, p)
	}
	return it, r.end(false)
}

// PairRecord is the V-server's record of a pair.
type PairRecord struct {
	Owner     string
	Value     []byte
	ACL       []string
	OwnerBlob []byte
}

func MarshalPairRecord(p *PairRecord) []byte {
	w := newMsg(RecPair)
	w.b8([]byte(p.Owner))
	w.b16(p.Value)
	w.names(p.ACL)
	w.b16(p.OwnerBlob)
	return w.b
}

func ParsePairRecord(b []byte) (*PairRecord, error) {
	r := newReader("pair record", b)
	r.header(RecPair)
	p := &PairRecord{Owner: string(r.b8("owner")), Value: r.b16("value"), ACL: r.names("acl")}
	p.OwnerBlob = r.b16("owner blob")
	return p, r.end(false)
}

// UserRecord is the V-server's record of a user: SHA-256 of the secret, admin flag.
type UserRecord struct {
	SecretHash [32]byte
	Admin      bool
}

func MarshalUserRecord(u *UserRecord) []byte {
	w := newMsg(RecUser)
	w.raw(u.SecretHash[:])
	var f uint8
	if u.Admin {
		f = 1
	}
	w.u8(f)
	return w.b
}

func ParseUserRecord(b []byte) (*UserRecord, error) {
	r := newReader("user record", b)
	r.header(RecUser)
	u := &UserRecord{}
	copy(u.SecretHash[:], r.take(32, "secret hash"))
	f := r.u8("flags")
	if r.err == nil && f > 1 {
		r.fail("flags 0x%02x", f)
	}
	u.Admin = f == 1
	return u, r.end(false)
}

// ParseID decodes a 16-byte bbolt key.
func ParseID(b []byte) (ID, error) {
	var id ID
	if len(b) != IDSize {
		return id, fmt.Errorf("%w: pair id of %d bytes", ErrMalformed, len(b))
	}
	copy(id[:], b)
	return id, nil
}
