package dupless

import (
	"path/filepath"
	"strings"
)

// selected applies get's --include and --exclude (shell patterns, as put's --exclude) to
// an entry at rel (slash-separated, below SRC). An entry is skipped when it, or a
// directory above it, matches an exclude pattern by name or by path. With include
// patterns, a file is kept only when it or a directory above it matches one; a directory
// that matches none is still walked (it may hold a match) but created only if a file lands
// in it (lazy).
func (c *Client) selected(rel string, isDir bool) (want, lazy bool) {
	inc, exc := c.opts.GetInclude, c.opts.GetExclude
	if len(inc) == 0 && len(exc) == 0 {
		return true, false
	}
	comps := strings.Split(rel, "/")
	included := len(inc) == 0
	for i, name := range comps {
		prefix := strings.Join(comps[:i+1], "/")
		if matchAny(exc, name, prefix) {
			return false, false
		}
		if !included && matchAny(inc, name, prefix) {
			included = true
		}
	}
	switch {
	case included:
		return true, false
	case isDir:
		return true, true
	}
	return false, false
}

func matchAny(patterns []string, name, path string) bool {
	for _, p := range patterns {
		if m, _ := filepath.Match(p, name); m {
			return true
		}
		if m, _ := filepath.Match(p, path); m {
			return true
		}
	}
	return false
}
