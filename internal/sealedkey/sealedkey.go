package sealedkey

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"
)

// Errors callers branch on.
var (
	ErrFormat          = errors.New("unreadable key file")
	ErrWrongPassphrase = errors.New("wrong passphrase (or the key file is damaged)")
)

// SaltSize is the argon2id salt's size.
const SaltSize = 16

// KDF are argon2id's cost parameters; they are stored in the key file.
type KDF struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// Check reports costs outside 1..maxTime passes, 8 KiB per lane..maxMemoryKiB, >= 1 lane.
func (k KDF) Check(maxTime, maxMemoryKiB uint32) error {
	if k.Time == 0 || k.Time > maxTime || k.MemoryKiB < 8*uint32(max(k.Threads, 1)) || k.MemoryKiB > maxMemoryKiB || k.Threads == 0 {
		return fmt.Errorf("out-of-range argon2id parameters (time %d, memory %d KiB, threads %d; allowed 1..%d passes, 8 KiB per thread..%d KiB)",
			k.Time, k.MemoryKiB, k.Threads, maxTime, maxMemoryKiB)
	}
	return nil
}

// key runs argon2id. With large memory it warms the heap first (warmHeap) and collects
// afterwards, so that the rest of the command reuses argon2id's pages (its 64 MiB are
// garbage once it returns) instead of faulting in fresh ones.
func (k KDF) key(pass []byte, salt [SaltSize]byte) []byte {
	if k.MemoryKiB < warmThresholdKiB {
		return argon2.IDKey(pass, salt[:], k.Time, k.MemoryKiB, k.Threads, chacha20poly1305.KeySize)
	}
	warmHeap(int(k.MemoryKiB) << 10)
	key := argon2.IDKey(pass, salt[:], k.Time, k.MemoryKiB, k.Threads, chacha20poly1305.KeySize)
	runtime.GC()
	return key
}

// Format is one key file layout.
type Format struct {
	Name         string // for errors: "veil key", "osync key"
	Magic        string
	Version      byte
	ExtraLen     int  // authenticated application fields after the salt
	SecretLen    int  // size of the sealed secret
	NonceInAD    bool // whether the nonce is part of the associated data
	MaxTime      uint32
	MaxMemoryKiB uint32
}

// Header is a key file's clear part.
type Header struct {
	KDF   KDF
	Salt  [SaltSize]byte
	Extra []byte // Format.ExtraLen bytes
}

func (f *Format) headerLen() int { return len(f.Magic) + 1 + 4 + 4 + 1 + SaltSize + f.ExtraLen }

// Size is the length of every key file of this format.
func (f *Format) Size() int {
	return f.headerLen() + chacha20poly1305.NonceSizeX + f.SecretLen + chacha20poly1305.Overhead
}

// Seal encrypts secret under pass with h's KDF, salt and extra fields, and the given
// 24-byte nonce (fresh random bytes from the caller).
func (f *Format) Seal(h *Header, pass, secret, nonce []byte) ([]byte, error) {
	switch {
	case len(secret) != f.SecretLen:
		return nil, fmt.Errorf("%s file: secret is %d bytes, want %d", f.Name, len(secret), f.SecretLen)
	case len(h.Extra) != f.ExtraLen:
		return nil, fmt.Errorf("%s file: %d header bytes, want %d", f.Name, len(h.Extra), f.ExtraLen)
	case len(nonce) != chacha20poly1305.NonceSizeX:
		return nil, fmt.Errorf("%s file: nonce is %d bytes, want %d", f.Name, len(nonce), chacha20poly1305.NonceSizeX)
	case len(pass) == 0:
		return nil, errors.New("empty passphrase")
	}
	if err := h.KDF.Check(f.MaxTime, f.MaxMemoryKiB); err != nil {
		return nil, fmt.Errorf("%s file: %w", f.Name, err)
	}
	b := make([]byte, 0, f.Size())
	b = append(b, f.Magic...)
	b = append(b, f.Version)
	b = binary.BigEndian.AppendUint32(b, h.KDF.Time)
	b = binary.BigEndian.AppendUint32(b, h.KDF.MemoryKiB)
	b = append(b, h.KDF.Threads)
	b = append(b, h.Salt[:]...)
	b = append(b, h.Extra...)
	ad := b
	b = append(b, nonce...)
	if f.NonceInAD {
		ad = b
	}
	aead, err := chacha20poly1305.NewX(h.KDF.key(pass, h.Salt))
	if err != nil {
		return nil, err
	}
	return aead.Seal(b, nonce, secret, ad), nil
}

// Parse checks the framing and the KDF bounds and returns the clear header, without the
// passphrase. Errors wrap ErrFormat.
func (f *Format) Parse(b []byte) (*Header, error) {
	if len(b) != f.Size() {
		return nil, fmt.Errorf("%w: %s file is %d bytes, want %d", ErrFormat, f.Name, len(b), f.Size())
	}
	if !bytes.HasPrefix(b, []byte(f.Magic)) {
		return nil, fmt.Errorf("%w: not a %s file (bad magic)", ErrFormat, f.Name)
	}
	p := b[len(f.Magic):]
	if p[0] != f.Version {
		return nil, fmt.Errorf("%w: %s file version %d, want %d", ErrFormat, f.Name, p[0], f.Version)
	}
	h := &Header{KDF: KDF{Time: binary.BigEndian.Uint32(p[1:]), MemoryKiB: binary.BigEndian.Uint32(p[5:]), Threads: p[9]}}
	if err := h.KDF.Check(f.MaxTime, f.MaxMemoryKiB); err != nil {
		return nil, fmt.Errorf("%w: %s file has %w", ErrFormat, f.Name, err)
	}
	copy(h.Salt[:], p[10:])
	h.Extra = bytes.Clone(p[10+SaltSize : 10+SaltSize+f.ExtraLen])
	return h, nil
}

// Open parses b and decrypts its secret with pass (ErrWrongPassphrase when it does not
// authenticate).
func (f *Format) Open(b, pass []byte) (*Header, []byte, error) {
	h, err := f.Parse(b)
	if err != nil {
		return nil, nil, err
	}
	hl := f.headerLen()
	nonce := b[hl : hl+chacha20poly1305.NonceSizeX]
	ad := b[:hl]
	if f.NonceInAD {
		ad = b[:hl+len(nonce)]
	}
	aead, err := chacha20poly1305.NewX(h.KDF.key(pass, h.Salt))
	if err != nil {
		return nil, nil, err
	}
	secret, err := aead.Open(nil, nonce, b[hl+len(nonce):], ad)
	if err != nil {
		return nil, nil, ErrWrongPassphrase
	}
	return h, secret, nil
}
