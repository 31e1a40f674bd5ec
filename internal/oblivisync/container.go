package oblivisync

import (
	"encoding/binary"
	"fmt"

	"github.com/veil-project/veil/internal/atomicfile"

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
		return nil, fmt.Errorf("%w: backend file failed authentication (tampered or from another backend; put back an intact copy of it, e.g. from your sync service's history: veil cannot repair it)", ErrIntegrity)
	}
	return plain, nil
}

// writeAtomic replaces path with data (mode 0600): a reader sees the old or the new file,
// never a torn one, and a crash loses nothing written before.
func writeAtomic(path string, data []byte, fsync bool) error {
	return atomicfile.Write(path, data, 0o600, fsync)
}
