package dupless

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"
)

// Key file: the user's master key sealed under a passphrase (docs/formats/key-record.md, "Key file").
//
//	magic "veil-key" | version 0x01 | argon2id time u32 | memory KiB u32 | threads u8 |
//	salt [16] | nonce [24] | XChaCha20-Poly1305(argon2id(passphrase, salt), master key)
//
// The associated data is every byte before the ciphertext, so parameters cannot be
// downgraded unnoticed.

var keyFileMagic = []byte("veil-key")

const keyFileHeader = 8 + 1 + 4 + 4 + 1 + 16 + 24

// KDFParams are argon2id's cost parameters.
type KDFParams struct {
	Time    uint32
	MemKiB  uint32
	Threads uint8
}

// DefaultKDF costs about 0.2 s and 64 MiB on a 2-core machine.
var DefaultKDF = KDFParams{Time: 3, MemKiB: 64 << 10, Threads: 4}

var kdfParams = DefaultKDF

// TestOnlyUseLowCostKDF makes new key files cheap to open. Tests only: it weakens every
// key file written afterwards in this process.
func TestOnlyUseLowCostKDF() { kdfParams = KDFParams{Time: 1, MemKiB: 64, Threads: 1} }

// Limits that keep a hostile key file from making us allocate or spin without bound.
const (
	maxKDFMemKiB = 4 << 20 // 4 GiB
	maxKDFTime   = 100
)

// ErrWrongPassphrase reports a key file that does not open with the given passphrase.
var ErrWrongPassphrase = errors.New("wrong passphrase (or the key file is damaged)")

// NewMasterKey returns a fresh random master key.
func NewMasterKey() []byte {
	k := make([]byte, MasterKeySize)
	rand.Read(k)
	return k
}

// SealKeyFile encrypts master under passphrase and returns the key file's bytes.
func SealKeyFile(master, passphrase []byte) ([]byte, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("master key is %d bytes, want %d", len(master), MasterKeySize)
	}
	if len(passphrase) == 0 {
		return nil, errors.New("empty passphrase")
	}
	p := kdfParams
	h := bytes.NewBuffer(make([]byte, 0, keyFileHeader+MasterKeySize+16))
	h.Write(keyFileMagic)
	h.WriteByte(1)
	binary.Write(h, binary.BigEndian, p.Time)
	binary.Write(h, binary.BigEndian, p.MemKiB)
	h.WriteByte(p.Threads)
	salt := make([]byte, 16+24)
	rand.Read(salt)
	h.Write(salt)
	hdr := h.Bytes()
	aead, _ := chacha20poly1305.NewX(argon2.IDKey(passphrase, salt[:16], p.Time, p.MemKiB, p.Threads, chacha20poly1305.KeySize))
	return aead.Seal(hdr, salt[16:], master, hdr), nil
}

// OpenKeyFile decrypts a key file with passphrase and returns the master key.
func OpenKeyFile(b, passphrase []byte) ([]byte, error) {
	if len(b) != keyFileHeader+MasterKeySize+chacha20poly1305.Overhead || !bytes.HasPrefix(b, keyFileMagic) {
		return nil, errors.New("not a veil key file")
	}
	if b[8] != 1 {
		return nil, fmt.Errorf("key file version %d is not supported", b[8])
	}
	p := KDFParams{Time: binary.BigEndian.Uint32(b[9:]), MemKiB: binary.BigEndian.Uint32(b[13:]), Threads: b[17]}
	if p.Time == 0 || p.Time > maxKDFTime || p.MemKiB < 8*uint32(max(p.Threads, 1)) || p.MemKiB > maxKDFMemKiB || p.Threads == 0 {
		return nil, fmt.Errorf("key file has out-of-range KDF parameters (time %d, memory %d KiB, threads %d)", p.Time, p.MemKiB, p.Threads)
	}
	salt, nonce := b[18:34], b[34:58]
	aead, _ := chacha20poly1305.NewX(argon2.IDKey(passphrase, salt, p.Time, p.MemKiB, p.Threads, chacha20poly1305.KeySize))
	master, err := aead.Open(nil, nonce, b[keyFileHeader:], b[:keyFileHeader])
	if err != nil {
		return nil, ErrWrongPassphrase
	}
	return master, nil
}
