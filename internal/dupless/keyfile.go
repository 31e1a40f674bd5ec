package dupless

import (
	"crypto/rand"

	"github.com/veil-project/veil/internal/sealedkey"
)

// Key file: the user's master key sealed under a passphrase (docs/formats/key-record.md,
// "Key file"), one Format of internal/sealedkey:
//
//	magic "veil-key" | version 0x01 | argon2id time u32 | memory KiB u32 | threads u8 |
//	salt [16] | nonce [24] | XChaCha20-Poly1305(argon2id(passphrase, salt), master key)
//
// The associated data is every byte before the ciphertext, so parameters cannot be
// downgraded unnoticed.
var keyFileFormat = sealedkey.Format{
	Name: "veil key", Magic: "veil-key", Version: 1, SecretLen: MasterKeySize, NonceInAD: true,
	// Limits that keep a hostile key file from making us allocate or spin without bound.
	MaxTime: 100, MaxMemoryKiB: 4 << 20, // 4 GiB
}

// KDFParams are argon2id's cost parameters.
type KDFParams = sealedkey.KDF

// DefaultKDF costs about 0.2 s and 64 MiB on a 2-core machine.
var DefaultKDF = KDFParams{Time: 3, MemoryKiB: 64 << 10, Threads: 4}

var kdfParams = DefaultKDF

// TestOnlyUseLowCostKDF makes new key files cheap to open. Tests only: it weakens every
// key file written afterwards in this process.
func TestOnlyUseLowCostKDF() { kdfParams = KDFParams{Time: 1, MemoryKiB: 64, Threads: 1} }

// ErrWrongPassphrase reports a key file that does not open with the given passphrase.
var ErrWrongPassphrase = sealedkey.ErrWrongPassphrase

// NewMasterKey returns a fresh random master key.
func NewMasterKey() []byte {
	k := make([]byte, MasterKeySize)
	rand.Read(k)
	return k
}

// SealKeyFile encrypts master under passphrase and returns the key file's bytes.
func SealKeyFile(master, passphrase []byte) ([]byte, error) {
	h := &sealedkey.Header{KDF: kdfParams}
	rand.Read(h.Salt[:])
	nonce := make([]byte, 24)
	rand.Read(nonce)
	return keyFileFormat.Seal(h, passphrase, master, nonce)
}

// OpenKeyFile decrypts a key file with passphrase and returns the master key.
func OpenKeyFile(b, passphrase []byte) ([]byte, error) {
	_, master, err := keyFileFormat.Open(b, passphrase)
	return master, err
}
