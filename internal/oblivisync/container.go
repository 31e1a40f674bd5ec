package oblivisync

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/chacha20poly1305"
)

// containerAAD binds a backend file to its backend, kind and index, so files cannot be
// swapped between positions or backends.
func containerAAD(id [idLen]byte, kind byte, index uint32) []byte {
	b := make([]byte, 0, 13+1+idLen+1+4)
	b = append(b, "veil-osync-v1"...)
	b = append(b, containerVersion)
	b = append(b, id[:]...)
	b = append(b, kind)
	return binary.BigEndian.AppendUint32(b, index)
}

// sealContainer encrypts plain (exactly g.plain bytes) into a B-byte file image.
func sealContainer(key *[32]byte, id [idLen]byte, kind byte, index uint32, plain, nonce []byte) []byte {
	aead, _ := chacha20poly1305.NewX(key[:])
	out := make([]byte, 0, containerHdr+len(plain)+containerTag)
	out = append(out, containerVersion)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, containerAAD(id, kind, index))
}

// openContainer authenticates and decrypts a B-byte file image.
func openContainer(key *[32]byte, id [idLen]byte, kind byte, index uint32, g geometry, b []byte) ([]byte, error) {
	if len(b) != g.B {
		return nil, fmt.Errorf("%w: backend file is %d bytes, want %d", ErrIntegrity, len(b), g.B)
	}
	if b[0] != containerVersion {
		return nil, fmt.Errorf("%w: backend file version %d, want %d", ErrIntegrity, b[0], containerVersion)
	}
	aead, _ := chacha20poly1305.NewX(key[:])
	plain, err := aead.Open(nil, b[1:containerHdr], b[containerHdr:], containerAAD(id, kind, index))
	if err != nil {
		return nil, fmt.Errorf("%w: backend file failed authentication (tampered or from another backend)", ErrIntegrity)
	}
	return plain, nil
}

const tempPrefix = ".tmp-"

// writeAtomic replaces path with data: temp file in the same directory, fsync, rename,
// fsync of the directory. A reader sees the old or the new file, never a torn one.
func writeAtomic(path string, data []byte, fsync bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && fsync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if fsync {
		syncDir(dir)
	}
	return nil
}

// syncDir fsyncs a directory so that entries created or renamed in it are durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
