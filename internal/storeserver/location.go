package storeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
)

// The data directory records where its content lives (docs/formats/store-records.md,
// "Blob location"): fsck, gc and serve read it from there, a flag may only restate it,
// and a store opened with another location is refused at start (before, fsck on an
// S3-backed store without --blobs reported every blob missing, and serve without --blobs
// started and served integrity errors).

// LocalBlobs is the recorded location of content kept in DIR/blobs.
const LocalBlobs = "local"

const locationFile = "blob-location.json"

type locationRecord struct {
	Version  int    `json:"version"`
	Location string `json:"location"`
}

// ErrBlobLocation is a store opened with a blob location other than the recorded one.
var ErrBlobLocation = errors.New("blob location mismatch")

// BlobLocation returns the location recorded in dir: LocalBlobs, or the blob store's
// location (s3://...); "" for a data directory made before the record existed.
func BlobLocation(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, locationFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("blob location: %w", err)
	}
	var r locationRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Version != 1 || r.Location == "" {
		return "", fmt.Errorf("blob location: %s is not a version 1 record", locationFile)
	}
	return r.Location, nil
}

func checkLocation(loc string) error {
	if loc == LocalBlobs {
		return nil
	}
	u, err := url.Parse(loc)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("blob location %q is not a URL", loc)
	}
	if u.User != nil {
		return fmt.Errorf("blob location %q carries credentials: give them in the environment, they would be recorded", u.Redacted())
	}
	return nil
}

func writeLocation(dir, loc string) error {
	if err := checkLocation(loc); err != nil {
		return err
	}
	b, _ := json.Marshal(locationRecord{Version: 1, Location: loc})
	return atomicfile.Write(filepath.Join(dir, locationFile), append(b, '\n'), 0o600, true)
}

// matchLocation checks the location a store is opened with against the record, and
// records it in a directory made before the record existed.
func matchLocation(dir string, cfg Config) error {
	want := cfg.BlobLocation
	if want == "" {
		want = LocalBlobs
	}
	if (want == LocalBlobs) != (cfg.Blobs == nil) {
		return fmt.Errorf("%w: blob location %q given with%s a blob store", ErrBlobLocation, want, map[bool]string{true: "out", false: ""}[cfg.Blobs == nil])
	}
	rec, err := BlobLocation(dir)
	switch {
	case err != nil:
		return err
	case rec == "":
		return writeLocation(dir, want)
	case rec != want:
		return fmt.Errorf("%w: the data directory keeps its content at %q, not %q (give --blobs %q, or none)", ErrBlobLocation, rec, want, rec)
	}
	return nil
}

// ResolveBlobs returns the blob location to open dir with: the recorded one, or flag
// when it restates it (flag "" means the record). A flag naming another location is
// refused; so is a directory without a record given no flag (LocalBlobs is assumed, as
// before the record existed).
func ResolveBlobs(dir, flag string) (string, error) {
	rec, err := BlobLocation(dir)
	if err != nil {
		return "", err
	}
	switch {
	case flag == "" && rec == "":
		return LocalBlobs, nil
	case flag == "":
		return rec, nil
	case rec != "" && flag != rec:
		return "", fmt.Errorf("%w: the data directory keeps its content at %q, --blobs says %q", ErrBlobLocation, rec, flag)
	}
	return flag, nil
}
