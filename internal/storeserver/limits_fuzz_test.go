package storeserver

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/veil-project/veil/internal/storage"
)

// FuzzParsePath checks the request path parser on arbitrary escaped paths: it never
// panics; what it accepts is canonical (every component a valid UTF-8 storage name,
// within the limits) and escapes back to a path it parses to the same result.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"", "a", "a/b", "a%20b/c", ".", "..", "a/..", "a//b", "/abs", "a/",
		"%2E%2E", "a%2Fb", "a%00", "%FF", "%C3%28", "%zz", "%", "a/b/c/d/e/f", strings.Repeat("a/", 70) + "a",
		strings.Repeat("x", 300), strings.Repeat("%41", 300), "\xff", "a\x00b", "é/ü"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	lim := Limits{MaxDepth: 8, MaxPathLen: 512}
	lim.defaults()
	f.Fuzz(func(t *testing.T, escaped string, root bool) {
		dir, name, err := lim.parsePath(escaped, root)
		if err != nil {
			if dir != "" || name != "" {
				t.Fatal("partial result with an error")
			}
			return
		}
		p := storage.Join(dir, name)
		if p == "" {
			if !root || escaped != "" {
				t.Fatalf("%q: empty path accepted", escaped)
			}
			return
		}
		if len(p) > lim.MaxPathLen {
			t.Fatalf("%q: %d bytes accepted", escaped, len(p))
		}
		comps := strings.Split(p, "/")
		if len(comps) > lim.MaxDepth {
			t.Fatalf("%q: %d components accepted", escaped, len(comps))
		}
		var re []string
		for _, c := range comps {
			if storage.CheckName(c) != nil || !utf8.ValidString(c) || len(c) > lim.MaxNameLen {
				t.Fatalf("%q: component %q accepted", escaped, c)
			}
			re = append(re, url.PathEscape(c))
		}
		d2, n2, err := lim.parsePath(strings.Join(re, "/"), root)
		if err != nil || d2 != dir || n2 != name {
			t.Fatalf("%q: re-escaped parses to %q %q %v", escaped, d2, n2, err)
		}
		if lim.check(dir, name, false) != nil {
			t.Fatalf("%q: accepted by the parser, refused by check", escaped)
		}
	})
}
