package storeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
)

// A data directory whose metadata is in PostgreSQL records the database's URL in
// meta-location.json (docs/formats/store-records.md, "Metadata location"); without it
// the metadata is meta.db (bbolt). The URL carries no password.

const metaLocationFile = "meta-location.json"

type metaLocation struct {
	Version int    `json:"version"`
	DB      string `json:"db"`
}

// MetaDB returns the PostgreSQL URL a data directory keeps its metadata in, "" for bbolt.
func MetaDB(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaLocationFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("metadata location: %w", err)
	}
	var r metaLocation
	if err := json.Unmarshal(b, &r); err != nil || r.Version != 1 || checkDB(r.DB) != nil {
		return "", fmt.Errorf("metadata location: %s is not a version 1 record", metaLocationFile)
	}
	return r.DB, nil
}

func writeMetaDB(dir, db string) error {
	b, _ := json.Marshal(metaLocation{Version: 1, DB: db})
	return atomicfile.Write(filepath.Join(dir, metaLocationFile), append(b, '\n'), 0o600, true)
}
