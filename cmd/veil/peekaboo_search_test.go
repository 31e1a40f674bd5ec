package main

import "testing"

// A search's results are other users' bytes: on a terminal a value holding ESC or a
// newline is shown escaped (it can neither send the terminal an escape sequence nor
// forge a result line); into a pipe it is written as published (scripts read values as
// before; --json gives them exactly). Noted in session 14's review of name quoting.
func TestSearchLineEscapesOnTerminal(t *testing.T) {
	key, value := "report\x1b]0;owned\x07", "line one\nfake result\x1b[2J"
	for _, c := range []struct {
		advanced, tty bool
		want          string
	}{
		{false, true, `line one\nfake result\033[2J` + "\n"},
		{true, true, `report\033]0;owned\a` + "\t" + `line one\nfake result\033[2J` + "\n"},
		{false, false, value + "\n"},
		{true, false, key + "\t" + value + "\n"},
		{false, true, "plain value\n"},
	} {
		v := value
		if c.want == "plain value\n" {
			v = "plain value"
		}
		if got := searchLine(key, v, c.advanced, c.tty); got != c.want {
			t.Errorf("advanced %v tty %v: %q, want %q", c.advanced, c.tty, got, c.want)
		}
	}
}
