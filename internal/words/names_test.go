package words

import (
	"os/exec"
	"strings"
	"testing"
)

func TestNameAndEscape(t *testing.T) {
	for _, c := range []struct{ in, name, escaped string }{
		{"report.pdf", "report.pdf", "report.pdf"},
		{"Отчёт 年 😀 it's a\\b", "Отчёт 年 😀 it's a\\b", "Отчёт 年 😀 it's a\\b"},
		{"evil\nveil: forged", `$'evil\nveil: forged'`, `evil\nveil: forged`},
		{"\x1b[31mred\x1b[0m", `$'\033[31mred\033[0m'`, `\033[31mred\033[0m`},
		{"a\tb\rc\x00d\x7f", `$'a\tb\rc\000d\177'`, `a\tb\rc\000d\177`},
		{"c1 \u0085 \u009b", `$'c1 \302\205 \302\233'`, `c1 \302\205 \302\233`},
		{"bad \xff\xfe utf8 \xe2\x82", `$'bad \377\376 utf8 \342\202'`, `bad \377\376 utf8 \342\202`},
		{"it's\n\\", `$'it\'s\n\\'`, `it's\n\`},
		{"$'x'", `$'$\'x\''`, "$'x'"},
		{"\ufffd", "\ufffd", "\ufffd"}, // U+FFFD written out is a character, not a bad byte
	} {
		if got := Name(c.in); got != c.name {
			t.Errorf("Name(%q) = %q, want %q", c.in, got, c.name)
		}
		if got := Escape(c.in); got != c.escaped {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.escaped)
		}
	}
}

// A name Name quotes, pasted into bash, is the name's exact bytes again.
func TestNameRoundTripsThroughBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	names := []string{"evil\nname", "\x1b]0;title\x07", "it's\n \\n", "\xff\xfe\x80", "\u0085\u009b1", "tab\there", "$'x'", "0\x1b1a"}
	var script strings.Builder
	for _, n := range names {
		script.WriteString("printf '%s\\0' " + Name(n) + "\n")
	}
	out, err := exec.Command(bash, "-c", script.String()).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"); strings.Join(got, "|") != strings.Join(names, "|") {
		t.Fatalf("bash read back %q, want %q", got, names)
	}
}

// Whatever the bytes, Name and Escape print no control character and valid UTF-8, and
// leave a clean name as it is.
func FuzzNameIsClean(f *testing.F) {
	for _, s := range []string{"report.pdf", "evil\nname", "\x1b[2J", "\xff", "$'x'", "\u009b", "it's \\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Name(s), Escape(s)} {
			if !clean(out) {
				t.Fatalf("%q printed as %q", s, out)
			}
		}
		if clean(s) && Escape(s) != s || (clean(s) && !strings.HasPrefix(s, "$'")) != (Name(s) == s) {
			t.Fatalf("%q: Name %q, Escape %q", s, Name(s), Escape(s))
		}
	})
}
