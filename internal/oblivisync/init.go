package oblivisync

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Init creates a backend in dir: N sparse files of exactly B bytes, an empty superblock,
// and osync.key holding a random master key sealed under argon2id(passphrase, salt).
func Init(dir string, pass []byte, p Params, kdf KDF) error {
	if err := p.validate(); err != nil {
		return err
	}
	if g := newGeometry(p.FileSize); !tagsFit(g, p.Files) {
		return fmt.Errorf("%w: %d files need a file size of at least %d bytes (the superblock lists every file's epoch and version tag)",
			ErrInvalid, p.Files, superMinFixed+superTagsLen(p.Files)+8*p.Files+containerHdr+containerTag)
	}
	if err := validateKDF(kdf); err != nil {
		return err
	}
	if len(pass) == 0 {
		return fmt.Errorf("%w: empty passphrase", ErrInvalid)
	}
	if _, err := os.Stat(filepath.Join(dir, keyFileName)); err == nil {
		return fmt.Errorf("%s: %w: already an osync backend", dir, ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("%w: backend directory %s is not empty (give osync a folder of its own)", ErrExist, dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	kf := &keyFile{kdf: kdf, params: p}
	copy(kf.salt[:], randomBytes(saltLen))
	copy(kf.id[:], randomBytes(idLen))
	master := randomBytes(masterLen)
	img, err := sealKeyFile(kf, pass, master, randomBytes(24))
	if err != nil {
		return err
	}
	k, err := deriveKeys(master)
	if err != nil {
		return err
	}
	be := &backend{dir: dir, params: p, g: newGeometry(p.FileSize), id: kf.id, keys: k, fsync: true,
		cache: map[uint32]cached{}, tag: fmt.Sprintf("%x", randomBytes(8))}
	for i := 0; i < p.Files; i++ {
		f, err := os.OpenFile(be.path(uint32(i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		err = f.Truncate(int64(p.FileSize)) // sparse: all zeros means "never written"
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	sb := &superblock{Epoch: 0, NextIno: rootIno + 1, Written: make([]uint64, p.Files), Pages: map[uint32]pageLoc{}, HasChange: true,
		HasTags: true, Tags: make([]uint64, p.Files)}
	if err := be.writeSuper(sb, randomBytes(superNonceLen)); err != nil {
		return err
	}
	// The key file goes last: its presence marks a complete backend.
	return writeAtomic(filepath.Join(dir, keyFileName), img, true)
}

// CheckPassphrase opens the backend's key file with pass and reports whether it is the
// current passphrase (nil) or why not, without changing anything: callers ask for it
// before prompting for a new passphrase.
func CheckPassphrase(dir string, pass []byte) error {
	b, err := os.ReadFile(filepath.Join(dir, keyFileName))
	if err != nil {
		return fmt.Errorf("%s: not an osync backend: %w", dir, err)
	}
	_, _, err = openKeyFile(b, pass)
	return err
}

// ChangePassphrase re-seals the backend's master key under a new passphrase with a fresh
// salt and nonce; the key, and so every backend file, stays as it is. Readers and writers
// elsewhere need the new passphrase once the sync client has delivered osync.key.
func ChangePassphrase(dir string, old, new []byte) error {
	if len(new) == 0 {
		return fmt.Errorf("%w: empty passphrase", ErrInvalid)
	}
	path := filepath.Join(dir, keyFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: not an osync backend: %w", dir, err)
	}
	kf, master, err := openKeyFile(b, old)
	if err != nil {
		return err
	}
	copy(kf.salt[:], randomBytes(saltLen))
	img, err := sealKeyFile(kf, new, master, randomBytes(24))
	if err != nil {
		return err
	}
	return writeAtomic(path, img, true)
}
