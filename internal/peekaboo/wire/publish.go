package wire

import (
	"crypto/hpke"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxChunk is the number of pairs per publication chunk (one HPKE context).
const MaxChunk = 4096

// KeyItemVersion is the version byte of a publication item plaintext. Version 1 padded to
// a multiple of 512 bytes, so a long key with many pseudonyms sealed to a larger item than
// a short one; version 2 is always KeyItemSize bytes.
const KeyItemVersion = 2

// KeyItemSize is the length of every publication item plaintext: the largest content (a
// MaxQuery-byte key and MaxPseudonyms pseudonyms) fits, and every item is zero-padded to
// it, so a sealed item's size says nothing of its key or of how many pseudonyms it allows.
const KeyItemSize = 1 + IDSize + 2 + MaxQuery + 1 + MaxPseudonyms*32 // 532

// SealedItemSize is the size of every sealed publication item: KeyItemSize and the AEAD tag.
func SealedItemSize() int { return KeyItemSize + 16 }

// KeyItem is what the K-server learns of one pair: its id, its key, and the pseudonym
// public keys allowed to match it (none: every querier).
type KeyItem struct {
	ID         ID
	Key        string
	Pseudonyms [][32]byte
}

// CheckKey validates a key (also used for queries' lengths).
func CheckKey(k string) error {
	switch {
	case len(k) == 0 || len(k) > MaxQuery:
		return fmt.Errorf("key of %d bytes: want 1..%d", len(k), MaxQuery)
	case !utf8.ValidString(k):
		return errors.New("key is not UTF-8")
	}
	return nil
}

// MarshalKeyItem encodes the plaintext of one publication item, zero-padded to exactly
// KeyItemSize bytes.
func MarshalKeyItem(it *KeyItem) ([]byte, error) {
	if err := CheckKey(it.Key); err != nil {
		return nil, err
	}
	if len(it.Pseudonyms) > MaxPseudonyms {
		return nil, fmt.Errorf("%d pseudonyms: at most %d", len(it.Pseudonyms), MaxPseudonyms)
	}
	w := &writer{b: make([]byte, 0, KeyItemSize)}
	w.u8(KeyItemVersion)
	w.raw(it.ID[:])
	w.b16([]byte(it.Key))
	w.u8(uint8(len(it.Pseudonyms)))
	for _, p := range it.Pseudonyms {
		w.raw(p[:])
	}
	w.fill(KeyItemSize)
	return w.b, nil
}

// ParseKeyItem decodes a publication item plaintext: exactly KeyItemSize bytes, zero-padded.
func ParseKeyItem(b []byte) (*KeyItem, error) {
	r := newReader("publication item", b)
	if v := r.u8("version"); r.err == nil && v != KeyItemVersion {
		r.fail("version %d, want %d (sealed by an older or newer veil)", v, KeyItemVersion)
	}
	if r.err == nil && len(b) != KeyItemSize {
		r.fail("%d bytes, want exactly %d", len(b), KeyItemSize)
	}
	it := &KeyItem{ID: r.id("id"), Key: string(r.b16("key"))}
	n := int(r.u8("pseudonyms"))
	if r.err == nil && n > MaxPseudonyms {
		r.fail("%d pseudonyms, at most %d", n, MaxPseudonyms)
	}
	for i := 0; i < n && r.err == nil; i++ {
		var p [32]byte
		copy(p[:], r.take(32, "pseudonym"))
		it.Pseudonyms = append(it.Pseudonyms, p)
	}
	if err := r.end(true); err != nil {
		return nil, err
	}
	if err := CheckKey(it.Key); err != nil {
		return nil, fmt.Errorf("%w: publication item: %v", ErrMalformed, err)
	}
	return it, nil
}

// SealedChunk is a publication chunk sealed to the K-server: one HPKE encapsulation and
// one ciphertext per item, in sequence (the context's nonce counter orders them).
type SealedChunk struct {
	Enc   []byte
	Items [][]byte
}

// SealChunk seals items (1..MaxChunk) to the K-server.
func SealChunk(pub *KServerPub, items []KeyItem) (*SealedChunk, error) {
	if len(items) == 0 || len(items) > MaxChunk {
		return nil, fmt.Errorf("chunk of %d pairs: want 1..%d", len(items), MaxChunk)
	}
	enc, s, err := hpke.NewSender(pub.pub, kdf(), aead(), []byte(infoPublish))
	if err != nil {
		return nil, err
	}
	c := &SealedChunk{Enc: enc}
	for i := range items {
		pt, err := MarshalKeyItem(&items[i])
		if err != nil {
			return nil, fmt.Errorf("pair %d: %w", i, err)
		}
		ct, err := s.Seal(nil, pt)
		if err != nil {
			return nil, err
		}
		c.Items = append(c.Items, ct)
	}
	return c, nil
}

// OpenChunk opens every item in order; any altered, dropped or reordered item fails the
// whole chunk with ErrOpen, an item not SealedItemSize bytes long with ErrMalformed.
func OpenChunk(k *KServerKey, c *SealedChunk) ([]KeyItem, error) {
	if len(c.Enc) != encLen() || len(c.Items) == 0 || len(c.Items) > MaxChunk {
		return nil, fmt.Errorf("%w: publication chunk header", ErrMalformed)
	}
	rc, err := hpke.NewRecipient(c.Enc, k.priv, kdf(), aead(), []byte(infoPublish))
	if err != nil {
		return nil, ErrOpen
	}
	out := make([]KeyItem, 0, len(c.Items))
	for i, ct := range c.Items {
		if len(ct) != SealedItemSize() {
			return nil, fmt.Errorf("%w: publication item %d: %d bytes sealed, want %d", ErrMalformed, i, len(ct), SealedItemSize())
		}
		pt, err := rc.Open(nil, ct)
		if err != nil {
			return nil, ErrOpen
		}
		it, err := ParseKeyItem(pt)
		if err != nil {
			return nil, err
		}
		out = append(out, *it)
	}
	return out, nil
}

// MarshalChunk encodes a sealed chunk as the relay payload: b16 enc, u32 n, n x b16 item.
func MarshalChunk(c *SealedChunk) []byte {
	w := &writer{}
	w.b16(c.Enc)
	w.b16s(c.Items)
	return w.b
}

// ParseChunk decodes MarshalChunk's output.
func ParseChunk(b []byte) (*SealedChunk, error) {
	r := newReader("publication chunk", b)
	c := &SealedChunk{Enc: r.b16("enc")}
	c.Items = r.b16s("items", MaxChunk)
	if err := r.end(false); err != nil {
		return nil, err
	}
	return c, nil
}
