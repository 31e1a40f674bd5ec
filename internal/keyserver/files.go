package keyserver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
)

// writeFileAtomic writes data to path through a temporary file, fsync and rename, so a
// crash leaves either the old or the new content (see atomicfile.Write).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.Write(path, data, perm, true)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}
