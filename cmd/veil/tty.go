package main

import (
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether f is a terminal (progress output goes there only).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
