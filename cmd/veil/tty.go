package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// isTerminal reports whether f is a terminal (progress output goes there only).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progressOut is where a command's progress lines go: its stderr when that is a terminal,
// else io.Discard (scripts and tests see no progress lines).
func progressOut(cmd *cobra.Command) io.Writer {
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && isTerminal(f) {
		return f
	}
	return io.Discard
}
