// Package words holds the small helpers every user-facing line of veil shares, so that the
// CLI and the packages whose errors and warnings reach the user word things alike: Count
// says "1 file", "2 files" (never "1 files"); Name and Escape keep the control characters
// of a name (a newline, an ESC) from reaching a terminal or forging an output line.
//
// It is a foundation: it imports nothing from veil, so every package may import it.
package words
