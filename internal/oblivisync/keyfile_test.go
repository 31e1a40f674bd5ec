package oblivisync

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The key file: the argon2id parameters Init seals and the ones a client opens.

// Init used to pass unchecked argon2id parameters on: time 0 panicked inside argon2, and
// memory 0 (or a --kdf-memory that overflowed) sealed a key file that parseKeyFile then
// refused, leaving a backend nobody could open.
func TestInitRejectsBadKDF(t *testing.T) {
	for _, k := range []KDF{{Time: 0, MemoryKiB: 64, Threads: 1}, {Time: 1, MemoryKiB: 0, Threads: 1},
		{Time: 1, MemoryKiB: 64, Threads: 0}, {Time: 65, MemoryKiB: 64, Threads: 1}, {Time: 1, MemoryKiB: maxKDFMemoryKiB + 1, Threads: 1}} {
		dir := filepath.Join(t.TempDir(), "b")
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Init(%+v) panicked: %v", k, r)
				}
			}()
			err = Init(dir, testPass, Params{Files: 4, FileSize: 4096, K: 1, DripTime: 1e9}, k)
		}()
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Init(%+v): got %v, want ErrInvalid", k, err)
		}
		if _, err := os.Stat(filepath.Join(dir, keyFileName)); err == nil {
			t.Fatalf("Init(%+v) left a key file", k)
		}
	}
}

// A key file is untrusted (it lives in the synced folder): a cloud that raises the
// argon2id memory must not make every client allocate gigabytes before the passphrase
// check fails.
func TestKeyFileMemoryCapped(t *testing.T) {
	kf := &keyFile{kdf: KDF{Time: 1, MemoryKiB: 64, Threads: 1}, params: Params{Files: 4, FileSize: 4096, K: 1, DripTime: 1e9}}
	img, err := sealKeyFile(kf, []byte("pw"), make([]byte, masterLen), make([]byte, 24))
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(img[9:], maxKDFMemoryKiB+1) // the memory field
	if _, err := parseKeyFile(img); !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
}
