package dupless

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
)

// A profile's local cache files (the put cache, docs/formats/put-cache.md, and the
// snapshot cache, snapshot-cache.md) share one sealing: byte 0 the file's version, 24
// bytes of nonce, then XChaCha20-Poly1305 under the put cache's key with each file's own
// associated data (bound to the storage location). Both are caches: a file that is
// absent, too large, of another version or fails authentication is rebuilt by its caller.

// errLocalVersion is a local file of another version.
var errLocalVersion = errors.New("unknown version")

// sealHeaded seals plain under aead as tree roots, tree bases and local files are laid
// out: byte 0 version, recordHeader-1 bytes of nonce, then the ciphertext.
func sealHeaded(aead cipher.AEAD, version byte, nonce, plain, ad []byte) []byte {
	out := make([]byte, recordHeader, recordHeader+len(plain)+aead.Overhead())
	out[0] = version
	copy(out[1:], nonce)
	return aead.Seal(out, out[1:recordHeader], plain, ad)
}

// openHeaded opens b sealed by sealHeaded under aead; its length is the caller's to check
// (headedFits).
func openHeaded(aead cipher.AEAD, b, ad []byte) ([]byte, error) {
	return aead.Open(nil, b[1:recordHeader], b[recordHeader:], ad)
}

// headedFits reports whether b is long enough to be sealed by sealHeaded under aead.
func headedFits(aead cipher.AEAD, b []byte) bool { return len(b) >= recordHeader+aead.Overhead() }

// sealLocal seals plain as a local file of version, under nonce.
func (k *userKeys) sealLocal(version byte, nonce, plain, ad []byte) []byte {
	return sealHeaded(k.cache, version, nonce, plain, ad)
}

// openLocal authenticates b, a local file of kind what (its errors' prefix) that must be
// of version, and returns its plaintext.
func (k *userKeys) openLocal(what string, version byte, b, ad []byte) ([]byte, error) {
	if !headedFits(k.cache, b) {
		return nil, fmt.Errorf("%s: %d bytes is too short", what, len(b))
	}
	if b[0] != version {
		return nil, fmt.Errorf("%s: %w %d", what, errLocalVersion, b[0])
	}
	plain, err := openHeaded(k.cache, b, ad)
	if err != nil {
		return nil, fmt.Errorf("%s: authentication failed (corrupt, another key's, or another location's)", what)
	}
	return plain, nil
}

// readLocal reads the local file path of kind what: nil and no error when it is absent,
// an error when it is over max bytes or cannot be read.
func readLocal(what, path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes is too large", what, fi.Size())
	}
	return os.ReadFile(path)
}

// writeLocal replaces the local file path with plain sealed (sealLocal, a fresh nonce):
// its folder made 0700, the file 0600, temp + rename without fsync. A machine crash may
// leave the previous file or none that opens; either costs its caller reads (the put
// cache's entries are used only while the authenticated root lists the same record
// hashes; the snapshot cache's while the same objects are listed), never a wrong answer,
// so the two fsyncs (a few ms of every lone put) buy nothing here.
func (k *userKeys) writeLocal(path string, version byte, plain, ad []byte) error {
	var nonce [recordHeader - 1]byte
	rand.Read(nonce[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, k.sealLocal(version, nonce[:], plain, ad), 0o600, false)
}
