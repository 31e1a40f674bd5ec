package storeserver

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// Limits bound the cost of every request (docs/formats/store-api.md, "Limits"). They are
// checked before any work: a path is refused while it is still being split, before any
// database access.
type Limits struct {
	MaxDepth      int // components in a path, the name included (default 64)
	MaxNameLen    int // bytes in one component (default and maximum 255)
	MaxPathLen    int // bytes in a whole path dir/name, unescaped (default 4096)
	MaxDirEntries int // entries directly in one directory (default 250,000)
}

// Default limits.
const (
	DefaultMaxDepth      = 64
	DefaultMaxPathLen    = 4096
	DefaultMaxDirEntries = 250_000
)

// EntryOverhead is the metadata cost of one entry beyond its path, counted against the
// user's quota together with the path bytes (the key) of every file and directory.
const EntryOverhead = 64

func (l *Limits) defaults() {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNameLen <= 0 || l.MaxNameLen > storage.MaxNameLen {
		l.MaxNameLen = storage.MaxNameLen
	}
	if l.MaxPathLen <= 0 {
		l.MaxPathLen = DefaultMaxPathLen
	}
	if l.MaxDirEntries <= 0 {
		l.MaxDirEntries = DefaultMaxDirEntries
	}
}

func limitErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", storewire.ErrLimit, fmt.Sprintf(format, a...))
}

// checkComponent validates one unescaped component: a storage name, valid UTF-8, within
// the component length limit.
func (l Limits) checkComponent(c string) error {
	if len(c) > l.MaxNameLen {
		return limitErr("a path component has %d bytes, limit %d", len(c), l.MaxNameLen)
	}
	if err := storage.CheckName(c); err != nil {
		return err
	}
	if !utf8.ValidString(c) {
		return fmt.Errorf("%w: %q is not valid UTF-8", storage.ErrInvalidName, c)
	}
	return nil
}

// check validates dir/name (dir may be empty, name may be empty only when allowRoot: a
// directory argument naming the root). Cost: O(len(dir)+len(name)), refusing at the first
// component past a limit.
func (l Limits) check(dir, name string, allowRoot bool) error {
	if dir == "" && name == "" {
		if allowRoot {
			return nil
		}
		return fmt.Errorf("%w: empty name", storage.ErrInvalidName)
	}
	p := storage.Join(dir, name)
	if dir != "" && name == "" {
		p = dir
	}
	if len(p) > l.MaxPathLen {
		return limitErr("path has %d bytes, limit %d", len(p), l.MaxPathLen)
	}
	depth := 0
	for rest := p; ; {
		depth++
		if depth > l.MaxDepth {
			return limitErr("path has more than %d components", l.MaxDepth)
		}
		c, after, more := strings.Cut(rest, "/")
		if err := l.checkComponent(c); err != nil {
			return fmt.Errorf("path %.64q: %w", p, err)
		}
		if !more {
			return nil
		}
		rest = after
	}
}

// checkPath validates a file path dir/name; checkDir a directory path ("" is the root).
func (l Limits) checkPath(dir, name string) error {
	if err := storage.CheckName(name); err != nil {
		return err
	}
	return l.check(dir, name, false)
}

func (l Limits) checkDir(dir string) error { return l.check(dir, "", true) }

// parsePath parses the escaped path of a request (what follows the route, e.g. "a/b%20c"
// of /v1/files/a/b%20c) strictly: every component percent-decoded on its own, and each
// one a valid, canonical name ('.', '..', empty components, a leading or trailing '/',
// an escaped '/' or NUL, invalid UTF-8 and invalid escapes are refused), within the
// limits. The work is O(len(escaped)) and stops at the first component past a limit;
// the escaped form is refused outright when it cannot decode to MaxPathLen bytes or less.
// allowRoot accepts the empty path (a directory route naming the root).
func (l Limits) parsePath(escaped string, allowRoot bool) (dir, name string, err error) {
	if escaped == "" {
		if allowRoot {
			return "", "", nil
		}
		return "", "", fmt.Errorf("%w: empty path", storage.ErrInvalidName)
	}
	if len(escaped) > 3*l.MaxPathLen { // every escape is 3 bytes for 1
		return "", "", limitErr("path has more than %d bytes", l.MaxPathLen)
	}
	var sb strings.Builder
	depth := 0
	for rest := escaped; ; {
		depth++
		if depth > l.MaxDepth {
			return "", "", limitErr("path has more than %d components", l.MaxDepth)
		}
		seg, after, more := strings.Cut(rest, "/")
		c, err := url.PathUnescape(seg)
		if err != nil {
			return "", "", fmt.Errorf("%w: bad escape in %.64q", storage.ErrInvalidName, seg)
		}
		if err := l.checkComponent(c); err != nil {
			return "", "", err
		}
		if depth > 1 {
			sb.WriteByte('/')
		}
		sb.WriteString(c)
		if sb.Len() > l.MaxPathLen {
			return "", "", limitErr("path has more than %d bytes", l.MaxPathLen)
		}
		if !more {
			break
		}
		rest = after
	}
	dir, name = storage.Split(sb.String())
	return dir, name, nil
}
