package oblivisync

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
)

// Backend files are replaced through temp files named after the writer that made them:
// ".<name>.tmp-<writer tag>-<digits>", where the tag is the first 8 bytes of the writer
// id in hex. A writer starting up removes only its own leftovers (a killed earlier run of
// the same state directory); another writer's temp file may be in flight at that very
// moment (issue 17: a second writer used to delete the first's and kill it).
const tempInfix = ".tmp-"

// abandonedTempAge is how old another writer's (or a pre-lease veil's) temp file must be
// before a starting writer removes it: an epoch writes a temp file within seconds, so an
// hour-old one was left by a killed process.
const abandonedTempAge = time.Hour

func writerTag(id [writerIDLen]byte) string { return fmt.Sprintf("%x", id[:8]) }

// writeFile atomically replaces path (in the backend) with data.
func (b *backend) writeFile(path string, data []byte) error {
	tmp, err := b.writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return b.syncDir()
}

// createExclusive creates path with data, failing with fs.ErrExist if it exists: a
// complete temp file placed atomically (atomicfile.PlaceNew: a hard link, or a rename
// without replacing where the file system has no hard links, as vfat and exFAT), so no
// one sees a partial file either.
func (b *backend) createExclusive(path string, data []byte) error {
	tmp, err := b.writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after a link; gone after a rename
	if _, err := atomicfile.PlaceNew(tmp, path); err != nil {
		return err
	}
	return b.syncDir()
}

func (b *backend) writeTemp(path string, data []byte) (string, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s exists and is not a regular file", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempInfix+b.tag+"-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil && b.fsync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (b *backend) syncDir() error {
	if !b.fsync {
		return nil
	}
	return atomicfile.SyncDir(b.dir)
}

// isTempName reports a backend temp file; own is true if it carries tag.
func isTempName(name, tag string) (temp, own bool) {
	if !strings.HasPrefix(name, ".") {
		return false, false
	}
	if i := strings.LastIndex(name, tempInfix); i > 0 {
		rest := name[i+len(tempInfix):]
		t, digits, ok := strings.Cut(rest, "-")
		if ok && len(t) == 16 && digits != "" && strings.Trim(digits, "0123456789") == "" {
			return true, t == tag
		}
	}
	legacy := atomicfile.IsTemp(name) || strings.HasPrefix(name, ".tmp-") // temp names of earlier versions
	return legacy, false
}

// removeStaleTemps deletes temp files a killed writer left in the backend (the sync
// client would otherwise upload them forever): this writer's own at once, anyone else's
// only once they are older than abandonedTempAge.
func removeStaleTemps(dir, tag string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		temp, own := isTempName(e.Name(), tag)
		if !temp || !e.Type().IsRegular() {
			continue
		}
		if !own {
			fi, err := e.Info()
			if err != nil || now.Sub(fi.ModTime()) < abandonedTempAge {
				continue
			}
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

// removeLocalTemps deletes temp files in the writer's own state directory, which its
// flock guards: any there are a killed earlier run's.
func removeLocalTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
