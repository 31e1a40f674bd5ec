package oblivisync

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Every writer state directory has a random writer id, kept in its file `writer-id`
// (32 lowercase hex digits and a newline), created before the writer first takes the
// backend's lease. It names the writer in the lease (so a restart of the same state
// directory, which holds the directory's flock, takes its own crashed lease over at once)
// and, by its first 8 bytes, in the writer's temp file names (so start-up cleanup removes
// only its own).
const (
	writerIDName = "writer-id"
	writerIDLen  = 16
)

func encodeWriterID(id [writerIDLen]byte) []byte { return []byte(hex.EncodeToString(id[:]) + "\n") }

func decodeWriterID(b []byte) ([writerIDLen]byte, error) {
	var id [writerIDLen]byte
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok || len(s) != 2*writerIDLen || strings.ToLower(s) != s {
		return id, fmt.Errorf("%w: writer-id is not %d lowercase hex digits and a newline", ErrFormat, 2*writerIDLen)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("%w: writer-id is not %d lowercase hex digits and a newline", ErrFormat, 2*writerIDLen)
	}
	return id, nil
}

// loadWriterID returns the state directory's writer id, creating it if it has none.
func loadWriterID(stateDir string, fsync bool) ([writerIDLen]byte, error) {
	path := filepath.Join(stateDir, writerIDName)
	b, err := os.ReadFile(path)
	if err == nil {
		id, err := decodeWriterID(b)
		if err != nil {
			return id, fmt.Errorf("%s: %w", path, err)
		}
		return id, nil
	}
	var id [writerIDLen]byte
	if !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	copy(id[:], randomBytes(writerIDLen))
	if err := writeAtomic(path, encodeWriterID(id), fsync); err != nil {
		return id, fmt.Errorf("state dir: %w", err)
	}
	return id, nil
}
