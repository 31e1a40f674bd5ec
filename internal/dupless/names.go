package dupless

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// Associated data of the deterministic name encryption. The key record uses a different
// AD (recordAD), so a name ciphertext can never be passed off as key material or vice versa.
var nameAD = []byte("veil/v1 name")

// keySuffix ends a file's key record name; ctxtSuffix is the paper's ciphertext suffix,
// kept only so MaxNameLen leaves room for it (a future layout may store small files inline).
const (
	keySuffix  = ".key"
	ctxtSuffix = ".ctxt"
)

// MaxNameLen is the longest file or directory name (bytes) stored as its own encryption:
// AES-SIV adds 16 bytes, base64url grows that by 4/3, and the result plus ".ctxt" must fit
// the storage service's 255-byte name limit. Longer names, up to MaxLongNameLen, are stored
// under a keyed tag with the encrypted name in a name object (longnames.go).
const MaxNameLen = (storage.MaxNameLen-len(ctxtSuffix))*3/4 - 16

// MaxLongNameLen is the longest name veil stores (the local file systems' limit).
const MaxLongNameLen = 255

// ErrNameTooLong reports a name longer than MaxLongNameLen.
var ErrNameTooLong = fmt.Errorf("name longer than %d bytes cannot be stored", MaxLongNameLen)

var b64 = base64.RawURLEncoding

// encName encrypts one path component.
func (k *userKeys) encName(name string) (string, error) {
	if len(name) > MaxLongNameLen {
		return "", fmt.Errorf("%.40q… (%d bytes): %w", name, len(name), ErrNameTooLong)
	}
	if err := storage.CheckName(name); err != nil {
		return "", err
	}
	if len(name) > MaxNameLen {
		return k.longTag(name), nil
	}
	c, err := k.names.EncryptDeterministically([]byte(name), nameAD)
	if err != nil {
		return "", err
	}
	return b64.EncodeToString(c), nil
}

// errForeignName reports a storage entry that is not a name this user encrypted.
var errForeignName = errors.New("not a veil name of this user")

// decName decrypts one encrypted path component.
func (k *userKeys) decName(enc string) (string, error) {
	if isLongTag(enc) {
		return k.long.name(enc)
	}
	c, err := b64.DecodeString(enc)
	if err != nil {
		return "", errForeignName
	}
	p, err := k.names.DecryptDeterministically(c, nameAD)
	if err != nil {
		return "", errForeignName
	}
	return string(p), nil
}

// encPath encrypts a slash-separated path component by component ("" stays the root).
func (k *userKeys) encPath(path string) (string, error) {
	path = cleanPath(path)
	if path == "" {
		return "", nil
	}
	parts := strings.Split(path, "/")
	for i, p := range parts {
		e, err := k.encName(p)
		if err != nil {
			return "", err
		}
		parts[i] = e
	}
	return strings.Join(parts, "/"), nil
}

// decPath decrypts an encrypted path.
func (k *userKeys) decPath(enc string) (string, error) {
	if enc == "" {
		return "", nil
	}
	parts := strings.Split(enc, "/")
	for i, p := range parts {
		d, err := k.decName(p)
		if err != nil {
			return "", err
		}
		parts[i] = d
	}
	return strings.Join(parts, "/"), nil
}

// cleanPath turns a user's path ("/a//b/", "./a") into the storage form ("a/b"). ".."
// is kept, so that name validation rejects it: a stored path never climbs.
func cleanPath(p string) string {
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	return strings.Join(parts, "/")
}
