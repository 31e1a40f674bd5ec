package words

import (
	"strings"
	"unicode/utf8"
)

// A name (a file name, a symlink's target, a value another user published) is bytes the
// user did not necessarily choose: printed as it is, a newline in it forges an output line
// and an ESC starts a terminal escape sequence. Text output shows such a name quoted the
// way shells quote it, $'...' (bash, zsh, ksh; POSIX.1-2024), so that it can be pasted
// into a command; a message that merely mentions names (an error's reason) has the same
// escapes in place. JSON output carries names as they are (docs/scripting.md).

// Name is name as text output shows it: unchanged unless it holds a control character
// (C0, DEL, C1) or bytes that are not UTF-8, or starts with "$'"; then quoted as $'...'
// with \n, \t, \r, \a, \b, \f, \v, \\ and \' for those characters and three-digit octal
// (\033, \377) for every other byte of a control character or a byte that is not UTF-8,
// as GNU ls quotes names. Text in another script (Cyrillic, CJK, emoji) stays as it is.
func Name(name string) string {
	if !strings.HasPrefix(name, "$'") && clean(name) {
		return name
	}
	var b strings.Builder
	b.WriteString("$'")
	escape(&b, name, true)
	b.WriteByte('\'')
	return b.String()
}

// Escape is text that may mention names (an error's reason, a problem a check found) with
// each control character and each byte that is not UTF-8 escaped as Name escapes them,
// without quotes: the text cannot break a line or reach the terminal as an escape
// sequence, and a clean text is returned unchanged.
func Escape(text string) string {
	if clean(text) {
		return text
	}
	var b strings.Builder
	escape(&b, text, false)
	return b.String()
}

// clean reports whether s is valid UTF-8 without control characters.
func clean(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if control(r, n) {
			return false
		}
		i += n
	}
	return true
}

// control reports whether the rune r, n bytes long, must be escaped: C0, DEL, C1, or a
// byte that is not UTF-8 (RuneError of length 1; a U+FFFD written out is 3 bytes).
func control(r rune, n int) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r == utf8.RuneError && n == 1)
}

var short = map[rune]string{'\a': `\a`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`}

func escape(b *strings.Builder, s string, quoted bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case quoted && (r == '\\' || r == '\''):
			b.WriteByte('\\')
			b.WriteRune(r)
		case control(r, n) && short[r] != "":
			b.WriteString(short[r])
		case control(r, n):
			for _, c := range []byte(s[i : i+n]) {
				b.WriteByte('\\')
				b.WriteByte('0' + c>>6)
				b.WriteByte('0' + c>>3&7)
				b.WriteByte('0' + c&7)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
}
