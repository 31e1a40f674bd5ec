package pir

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
)

// Slot and digest sizes (docs/formats/peekaboo-pir.md).
const (
	TagSize    = 8
	SlotSize   = TagSize + 16 + 16 // tag, SIV, encrypted id
	DigestSize = 16
	IDSize     = 16
)

// ErrIntegrity means the reconstructed bucket is not one the table can hold: a server
// answered wrongly, or the two servers' tables differ.
var ErrIntegrity = errors.New("private-query answers do not reconstruct a valid bucket (a server answered wrongly, or the servers' tables differ)")

// Slot is one table entry: tag || SIV || AES-CTR(id). The zero slot is empty.
type Slot [SlotSize]byte

// Entry is a slot with the 32-bit hash whose low Bits bits name its bucket.
type Entry struct {
	Hash uint32
	Slot Slot
}

// Material is what the key determines: its bucket hash, tag and slot keys.
type Material struct {
	Hash   uint32
	Tag    [TagSize]byte
	macKey [32]byte
	enc    cipher.Block
}

const deriveSalt = "veil peekaboo v1 pir"

// Derive computes the material of key: HKDF-SHA256(ikm = key, salt = "veil peekaboo v1
// pir", info = "slot") expanded to 4 + 8 + 32 + 16 bytes: hash, tag, MAC key, AES-128 key.
func Derive(key string) *Material {
	okm, err := hkdf.Key(sha256.New, []byte(key), []byte(deriveSalt), "slot", 60)
	if err != nil {
		panic(err) // 60 bytes is within HKDF-SHA256's limit
	}
	m := &Material{Hash: binary.BigEndian.Uint32(okm[:4])}
	copy(m.Tag[:], okm[4:12])
	copy(m.macKey[:], okm[12:44])
	if m.enc, err = aes.NewCipher(okm[44:60]); err != nil {
		panic(err)
	}
	return m
}

// Bucket is the key's bucket in a table of 2^bits buckets.
func (m *Material) Bucket(bits int) uint32 { return m.Hash & (1<<bits - 1) }

func (m *Material) siv(id *[IDSize]byte) []byte {
	h := hmac.New(sha256.New, m.macKey[:])
	h.Write([]byte("veil peekaboo v1 pir slot"))
	h.Write(id[:])
	return h.Sum(nil)[:16]
}

// Seal makes the slot of pair id under this key. It is deterministic (SIV), so the
// K-server recomputes the same slot from its state after a restart.
func (m *Material) Seal(id [IDSize]byte) Entry {
	var s Slot
	copy(s[:TagSize], m.Tag[:])
	iv := m.siv(&id)
	copy(s[TagSize:], iv)
	cipher.NewCTR(m.enc, iv).XORKeyStream(s[TagSize+16:], id[:])
	return Entry{Hash: m.Hash, Slot: s}
}

// Open returns the pair id in s if s carries this key's tag. ok is false for another
// key's slot; an error means the tag is this key's but the slot does not authenticate.
func (m *Material) Open(s *Slot) (id [IDSize]byte, ok bool, err error) {
	if !bytes.Equal(s[:TagSize], m.Tag[:]) {
		return id, false, nil
	}
	iv := s[TagSize : TagSize+16]
	cipher.NewCTR(m.enc, iv).XORKeyStream(id[:], s[TagSize+16:])
	if subtle.ConstantTimeCompare(m.siv(&id), iv) != 1 {
		return id, false, fmt.Errorf("%w: a slot with this key's tag does not authenticate", ErrIntegrity)
	}
	return id, true, nil
}

// digest is SHA-256("veil peekaboo v1 pir bucket" || u32 bucket || slots)[:16].
func digest(bucket uint32, slots []byte) [DigestSize]byte {
	h := sha256.New()
	h.Write([]byte("veil peekaboo v1 pir bucket"))
	h.Write(binary.BigEndian.AppendUint32(nil, bucket))
	h.Write(slots)
	var d [DigestSize]byte
	copy(d[:], h.Sum(nil))
	return d
}

// Find reconstructs bucket from the two servers' answers, checks it (digest over its
// index, sorted slots, empty slots last) and returns the ids of m's slots in it.
func (m *Material) Find(p Params, a0, a1 []byte) ([][IDSize]byte, error) {
	if len(a0) != p.BucketSize() || len(a1) != p.BucketSize() {
		return nil, fmt.Errorf("%w: answers of %d and %d bytes, want %d", ErrIntegrity, len(a0), len(a1), p.BucketSize())
	}
	b := make([]byte, p.BucketSize())
	subtle.XORBytes(b, a0, a1)
	slots := b[:p.Slots*SlotSize]
	if d := digest(m.Bucket(p.Bits), slots); !bytes.Equal(d[:], b[len(slots):]) {
		return nil, ErrIntegrity
	}
	var ids [][IDSize]byte
	var zero, prev Slot
	for i := 0; i < p.Slots; i++ {
		s := Slot(slots[i*SlotSize : (i+1)*SlotSize])
		if i > 0 && (prev == zero && s != zero || s != zero && bytes.Compare(prev[:], s[:]) >= 0) {
			return nil, fmt.Errorf("%w: slots out of order", ErrIntegrity)
		}
		prev = s
		id, ok, err := m.Open(&s)
		if err != nil {
			return nil, err
		}
		if ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
