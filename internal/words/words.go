package words

import "strconv"

// Count is n with the noun that goes with it: one for 1 (and -1), many otherwise
// ("0 files", "1 file", "2 files"). The caller gives both forms: "entry", "entries".
func Count(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}
