package oblivisync

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CheckOutside refuses a path (the writer's state directory, a mountpoint) that is the
// backend directory or lies below it: the sync client would upload it, and both the
// journal (whose size follows the workload) and a mount (plaintext) must stay local.
func CheckOutside(backend, path, what string) error {
	b, p := resolvePath(backend), resolvePath(path)
	if rel, err := filepath.Rel(b, p); err == nil && (rel == "." || !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "..") {
		return fmt.Errorf("%w: %s %s is inside the synced backend folder %s (the sync client would upload it); put it elsewhere", ErrInvalid, what, path, backend)
	}
	return nil
}

// resolvePath makes p absolute with symlinks resolved in its longest existing prefix.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == filepath.Dir(cur) {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}
