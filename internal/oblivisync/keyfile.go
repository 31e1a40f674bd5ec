package oblivisync

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/veil-project/veil/internal/sealedkey"
)

// Params fixes a backend's shape; they are authenticated in the key file.
type Params struct {
	Files    int           // N: number of backend files (block pairs)
	FileSize int           // B: bytes per backend file
	K        int           // drip rate: backend files rewritten per epoch
	DripTime time.Duration // t: time between epochs of a mounted writer
}

// DefaultParams are the paper's: N=1024, B=1 MB, k=3, t=1s.
var DefaultParams = Params{Files: 1024, FileSize: 1 << 20, K: 3, DripTime: time.Second}

// KDF are argon2id's cost parameters; they are stored in the key file.
type KDF = sealedkey.KDF

// DefaultKDF follows RFC 9106's second recommended option (64 MiB, t=3).
var DefaultKDF = KDF{Time: 3, MemoryKiB: 64 << 10, Threads: 4}

const (
	keyMagic    = "VOSK"
	keyVersion  = 1
	keyFileName = "osync.key"
	saltLen     = 16
	idLen       = 16
	masterLen   = 32
	keyHdrLen   = 4 + 1 + 4 + 4 + 1 + saltLen + idLen + 4*4
	minFileSize = 4096
	// maxKDFMemoryKiB caps argon2id's memory (1 GiB): the key file sits in the untrusted
	// folder, and its cost parameters are used before the passphrase check can fail.
	maxKDFMemoryKiB = 1 << 20
	maxKDFTime      = 64
	maxFileSize     = 1 << 30
)

func (p Params) validate() error {
	switch {
	case p.Files < 2 || p.Files > 1<<24:
		return fmt.Errorf("%w: files must be between 2 and %d, got %d", ErrInvalid, 1<<24, p.Files)
	case p.FileSize < minFileSize || p.FileSize > maxFileSize:
		return fmt.Errorf("%w: file size must be between %d and %d bytes, got %d", ErrInvalid, minFileSize, maxFileSize, p.FileSize)
	case p.K < 1 || p.K > p.Files:
		return fmt.Errorf("%w: drip rate k must be between 1 and files (%d), got %d", ErrInvalid, p.Files, p.K)
	case 64+8*p.Files > newGeometry(p.FileSize).plain:
		return fmt.Errorf("%w: %d files need a file size of at least %d bytes (the superblock lists every file's epoch)", ErrInvalid, p.Files, 8*p.Files+64+containerHdr+containerTag)
	case p.DripTime < time.Millisecond || p.DripTime > 24*time.Hour:
		return fmt.Errorf("%w: drip time must be between 1ms and 24h, got %s", ErrInvalid, p.DripTime)
	}
	return nil
}

func validateKDF(k KDF) error {
	if k.Check(maxKDFTime, maxKDFMemoryKiB) != nil {
		return fmt.Errorf("%w: argon2id needs 1..64 passes, %d KiB..1 GiB of memory and at least 1 lane, got %d passes, %d KiB, %d lanes",
			ErrInvalid, 8*max(k.Threads, 1), k.Time, k.MemoryKiB, k.Threads)
	}
	return nil
}

// keys are the subkeys derived from the master key.
type keys struct {
	backend [32]byte // backend files and superblock
	journal [32]byte // local journal and checkpoint
	lease   [32]byte // the backend's writer lease
}

func deriveKeys(master []byte) (keys, error) {
	var k keys
	for _, d := range []struct {
		dst  *[32]byte
		info string
	}{{&k.backend, "veil-osync-v1 backend"}, {&k.journal, "veil-osync-v1 journal"}, {&k.lease, "veil-osync-v1 lease"}} {
		b, err := hkdf.Key(sha256.New, master, nil, d.info, 32)
		if err != nil {
			return k, err
		}
		copy(d.dst[:], b)
	}
	return k, nil
}

// keyFormat is osync.key as a Format of internal/sealedkey (docs/formats/oblivisync.md):
// the common header, then the backend id and Params as extra authenticated fields; the
// nonce is not part of the associated data.
var keyFormat = sealedkey.Format{
	Name: "osync key", Magic: keyMagic, Version: keyVersion, ExtraLen: idLen + 4*4,
	SecretLen: masterLen, MaxTime: maxKDFTime, MaxMemoryKiB: maxKDFMemoryKiB,
}

// keyFileLen is the size of every osync.key.
var keyFileLen = keyFormat.Size()

// keyFile is the decoded osync.key.
type keyFile struct {
	kdf    KDF
	salt   [saltLen]byte
	id     [idLen]byte
	params Params
}

func (kf *keyFile) header() *sealedkey.Header {
	b := make([]byte, 0, keyFormat.ExtraLen)
	b = append(b, kf.id[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(kf.params.Files))
	b = binary.BigEndian.AppendUint32(b, uint32(kf.params.FileSize))
	b = binary.BigEndian.AppendUint32(b, uint32(kf.params.K))
	b = binary.BigEndian.AppendUint32(b, uint32(kf.params.DripTime/time.Millisecond))
	return &sealedkey.Header{KDF: kf.kdf, Salt: kf.salt, Extra: b}
}

// sealKeyFile encrypts master under a key derived from pass; nonce is the AEAD nonce.
func sealKeyFile(kf *keyFile, pass, master, nonce []byte) ([]byte, error) {
	return keyFormat.Seal(kf.header(), pass, master, nonce)
}

// parseKeyFile checks the framing and returns the header fields (without the passphrase).
func parseKeyFile(b []byte) (*keyFile, error) {
	h, err := keyFormat.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%w)", ErrFormat, err)
	}
	return fromHeader(h)
}

func fromHeader(h *sealedkey.Header) (*keyFile, error) {
	kf := &keyFile{kdf: h.KDF, salt: h.Salt}
	copy(kf.id[:], h.Extra)
	p := h.Extra[idLen:]
	kf.params = Params{
		Files:    int(binary.BigEndian.Uint32(p)),
		FileSize: int(binary.BigEndian.Uint32(p[4:])),
		K:        int(binary.BigEndian.Uint32(p[8:])),
		DripTime: time.Duration(binary.BigEndian.Uint32(p[12:])) * time.Millisecond,
	}
	if err := kf.params.validate(); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	return kf, nil
}

// openKeyFile returns the header and the master key.
func openKeyFile(b, pass []byte) (*keyFile, []byte, error) {
	if _, err := parseKeyFile(b); err != nil { // params checked before the KDF runs
		return nil, nil, err
	}
	h, master, err := keyFormat.Open(b, pass)
	if err != nil {
		return nil, nil, err
	}
	kf, err := fromHeader(h)
	return kf, master, err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // rand.Read never fails on supported platforms
	}
	return b
}
