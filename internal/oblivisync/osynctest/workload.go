package osynctest

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Target is a filesystem addressed by slash paths relative to its root.
type Target interface {
	Mkdir(p string) error
	WriteAt(p string, off int64, data []byte) error // creates the file if missing
	Truncate(p string, size int64) error
	Remove(p string) error // file or symlink
	Rmdir(p string) error
	Rename(from, to string) error
	Symlink(target, p string) error
	Chmod(p string, mode fs.FileMode) error
}

// Dir is a Target on a real directory (a reference copy or a FUSE mount).
type Dir string

func (d Dir) abs(p string) string { return filepath.Join(string(d), filepath.FromSlash(p)) }

func (d Dir) Mkdir(p string) error { return os.Mkdir(d.abs(p), 0o755) }
func (d Dir) WriteAt(p string, off int64, data []byte) error {
	f, err := os.OpenFile(d.abs(p), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
func (d Dir) Truncate(p string, size int64) error { return os.Truncate(d.abs(p), size) }
func (d Dir) Remove(p string) error               { return os.Remove(d.abs(p)) }
func (d Dir) Rmdir(p string) error                { return os.Remove(d.abs(p)) }
func (d Dir) Rename(a, b string) error            { return os.Rename(d.abs(a), d.abs(b)) }
func (d Dir) Symlink(t, p string) error           { return os.Symlink(t, d.abs(p)) }
func (d Dir) Chmod(p string, m fs.FileMode) error { return os.Chmod(d.abs(p), m) }

// Workload generates random operations over a tree it tracks itself.
type Workload struct {
	rng   *rand.Rand
	dirs  []string // "" is the root
	files map[string]int64
	links map[string]bool
	n     int
	// MaxFile bounds file sizes.
	MaxFile int64
}

// NewWorkload starts from an empty tree.
func NewWorkload(seed uint64, maxFile int64) *Workload {
	return &Workload{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dirs: []string{""},
		files: map[string]int64{}, links: map[string]bool{}, MaxFile: maxFile}
}

func (w *Workload) name(prefix string) string {
	w.n++
	return fmt.Sprintf("%s%d", prefix, w.n)
}

func (w *Workload) pick(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[w.rng.IntN(len(keys))]
}

func (w *Workload) data(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(w.rng.UintN(256))
	}
	return b
}

// Step applies one random operation to every target and returns its description; any
// target error is returned (the operations chosen are always valid).
func (w *Workload) Step(ts ...Target) (string, error) {
	do := func(desc string, f func(Target) error) (string, error) {
		for _, t := range ts {
			if err := f(t); err != nil {
				return desc, fmt.Errorf("%s: %w", desc, err)
			}
		}
		return desc, nil
	}
	dir := w.dirs[w.rng.IntN(len(w.dirs))]
	r := w.rng.IntN(100)
	switch {
	case r < 8 && len(w.dirs) < 12:
		p := path.Join(dir, w.name("d"))
		w.dirs = append(w.dirs, p)
		return do("mkdir "+p, func(t Target) error { return t.Mkdir(p) })
	case r < 30 || len(w.files) == 0:
		p := path.Join(dir, w.name("f"))
		n := w.rng.Int64N(w.MaxFile + 1)
		data := w.data(n)
		w.files[p] = n
		return do(fmt.Sprintf("create %s %d", p, n), func(t Target) error { return t.WriteAt(p, 0, data) })
	case r < 50:
		p := w.pick(w.files)
		off := w.rng.Int64N(w.files[p] + 1)
		n := w.rng.Int64N(w.MaxFile/4 + 1)
		data := w.data(n)
		w.files[p] = max(w.files[p], off+n)
		return do(fmt.Sprintf("modify %s @%d+%d", p, off, n), func(t Target) error { return t.WriteAt(p, off, data) })
	case r < 62:
		p := w.pick(w.files)
		size := w.rng.Int64N(w.MaxFile + 1)
		w.files[p] = size
		return do(fmt.Sprintf("truncate %s %d", p, size), func(t Target) error { return t.Truncate(p, size) })
	case r < 70:
		p := w.pick(w.files)
		delete(w.files, p)
		return do("delete "+p, func(t Target) error { return t.Remove(p) })
	case r < 82:
		p := w.pick(w.files)
		to := path.Join(dir, w.name("r"))
		w.files[to] = w.files[p]
		delete(w.files, p)
		return do("rename "+p+" "+to, func(t Target) error { return t.Rename(p, to) })
	case r < 86:
		p := path.Join(dir, w.name("l"))
		w.links[p] = true
		return do("symlink "+p, func(t Target) error { return t.Symlink("target/"+p, p) })
	case r < 92:
		p := w.pick(w.files)
		m := fs.FileMode(0o600 | w.rng.IntN(0o100))
		return do(fmt.Sprintf("chmod %s %o", p, m), func(t Target) error { return t.Chmod(p, m) })
	default: // remove an empty directory, or move one across directories
		for i := len(w.dirs) - 1; i > 0; i-- {
			d := w.dirs[i]
			if w.empty(d) {
				w.dirs = append(w.dirs[:i], w.dirs[i+1:]...)
				return do("rmdir "+d, func(t Target) error { return t.Rmdir(d) })
			}
		}
		if len(w.dirs) > 1 {
			d := w.dirs[1+w.rng.IntN(len(w.dirs)-1)]
			to := w.name("m")
			w.moveDir(d, to)
			return do("rename dir "+d+" "+to, func(t Target) error { return t.Rename(d, to) })
		}
		return "noop", nil
	}
}

func (w *Workload) empty(d string) bool {
	pfx := d + "/"
	for f := range w.files {
		if strings.HasPrefix(f, pfx) {
			return false
		}
	}
	for l := range w.links {
		if strings.HasPrefix(l, pfx) {
			return false
		}
	}
	for _, x := range w.dirs {
		if strings.HasPrefix(x, pfx) {
			return false
		}
	}
	return true
}

// moveDir renames directory d (and everything below it) to the root-level name to.
func (w *Workload) moveDir(d, to string) {
	re := func(p string) string {
		if p == d {
			return to
		}
		if strings.HasPrefix(p, d+"/") {
			return to + p[len(d):]
		}
		return p
	}
	for i, x := range w.dirs {
		w.dirs[i] = re(x)
	}
	nf := map[string]int64{}
	for f, s := range w.files {
		nf[re(f)] = s
	}
	w.files = nf
	nl := map[string]bool{}
	for l := range w.links {
		nl[re(l)] = true
	}
	w.links = nl
}

// Snapshot describes every entry below root: type, permissions, size and a content hash.
func Snapshot(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + t
		case info.IsDir():
			out[rel] = fmt.Sprintf("dir %o", info.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %o %d %x", info.Mode().Perm(), len(b), sha256.Sum256(b))
		}
		return nil
	})
	return out, err
}

// Diff lists the differences between two snapshots ("" when equal).
func Diff(want, got map[string]string) string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if want[k] != got[k] {
			fmt.Fprintf(&b, "%s: want %q, got %q\n", k, want[k], got[k])
		}
	}
	return b.String()
}
