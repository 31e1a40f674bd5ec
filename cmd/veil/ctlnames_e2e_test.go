package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// A file name is bytes anyone who can write a folder chooses: printed raw, a newline in it
// forged an output line of ls, find, diff or an error, and an ESC sent the terminal an
// escape sequence. Text output quotes such names $'...' (stdout) or escapes them in place
// (stderr); --json carries them as they are (docs/scripting.md).
func TestE2ETextOutputEscapesControlCharacters(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	const (
		nl  = "evil\nveil: forged line"
		esc = "\x1b[31mred\x1b[0m"
		c1  = "csi\u009b2J"
		bad = "caf\xe9\tx"
	)
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, nl), 300_000, 1) // the largest chunk: damaged below
	randomFile(t, filepath.Join(src, esc), 10, 2)
	randomFile(t, filepath.Join(src, c1), 10, 3)
	randomFile(t, filepath.Join(src, bad), 10, 4)
	if err := os.Symlink(esc, filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	// Nothing a terminal acts on: no control character but the line ends, valid UTF-8,
	// and no line a name forged.
	safe := func(t *testing.T, what, out string) {
		t.Helper()
		for _, r := range strings.TrimSuffix(out, "\n") {
			if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Errorf("%s: control character %U in %q", what, r, out)
			}
		}
		if !utf8.ValidString(out) || strings.Contains(out, "\nveil: forged") || strings.HasPrefix(out, "veil: forged") {
			t.Errorf("%s: %q", what, out)
		}
	}
	want := func(t *testing.T, what, out string, parts ...string) {
		t.Helper()
		safe(t, what, out)
		for _, p := range parts {
			if !strings.Contains(out, p) {
				t.Errorf("%s: no %s in %q", what, p, out)
			}
		}
	}
	qnl, qesc, qc1, qbad := `$'evil\nveil: forged line'`, `$'\033[31mred\033[0m'`, `$'csi\302\2332J'`, `$'caf\351\tx'`

	want(t, "put -n", u.mustRun(t, "put", "-n", src), `/docs/evil\nveil: forged line' -> $'docs/evil\nveil: forged line' (file)`, "docs/"+qesc[2:])
	u.mustRun(t, "put", "-q", src)
	want(t, "ls", u.mustRun(t, "ls", "docs"), qnl+"\n", qesc+"\n", qc1+"\n", qbad+"\n")
	want(t, "ls -l", u.mustRun(t, "ls", "-l", "docs"), " "+qnl+"\n", "link -> "+qesc+"\n")
	want(t, "find", u.mustRun(t, "find", nl), `$'docs/evil\nveil: forged line'`+"\n")

	// A folder where a file of its name is stored: put fails it, one line on stderr.
	clash := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(clash, esc, "in"), 10, 5)
	randomFile(t, filepath.Join(clash, nl+"2"), 10, 6)
	_, errs, code := u.run(t, "put", "-q", clash)
	if code != 3 || strings.Count(errs, "\n") != 2 {
		t.Errorf("put of a folder over a file: exit %d, stderr %q", code, errs)
	}
	want(t, "put's per-file error", errs, `veil: `+clash+`/\033[31mred\033[0m: `)
	want(t, "diff", u.mustRun(t, "diff", "1", "latest"), "+ "+`$'docs/evil\nveil: forged line2'`+"\n")
	if err := os.Remove(filepath.Join(src, c1)); err != nil {
		t.Fatal(err)
	}
	want(t, "sync -n", u.mustRun(t, "sync", "-n", src), "- "+`$'docs/csi\302\2332J'`+"\n")

	_, errs, code = u.run(t, "cat", "docs/"+nl+"3")
	if code != 1 || errs != "veil: docs/evil\\nveil: forged line3: not found\n" {
		t.Errorf("cat of a missing name: exit %d, stderr %q", code, errs)
	}
	_, errs, _ = u.run(t, "rm", "docs/"+esc+"x", "docs/"+bad)
	want(t, "rm's per-path error", errs, "veil: docs/\\033[31mred\\033[0mx: not found\n")

	flipLargestBlob(t, d.dir, 200_000)
	out, _, code := u.run(t, "check", "--read-data")
	if code != 3 {
		t.Errorf("check of a damaged file: exit %d", code)
	}
	want(t, "check", out, "damaged: "+`$'docs/evil\nveil: forged line'`+": ")

	// --json keeps the names as they are.
	var m map[string]any
	if err := json.Unmarshal([]byte(u.mustRun(t, "find", "--json", nl)), &m); err != nil || m["path"] != "docs/"+nl {
		t.Errorf("find --json: %v %v", m, err)
	}
}
