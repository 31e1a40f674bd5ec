package main

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/spf13/cobra"
)

// Progress of long mv and rm -r runs: a line on stderr every progressEvery entries, when
// stderr is a terminal or --progress asks for it (scripts, logs).

const progressEvery = 100

// entryTotal is the number of entries a mv announced (0: unknown, as for rm -r).
type entryTotal struct{ atomic.Int64 }

func (o *clientFlags) addProgressFlag(c *cobra.Command, verb string) {
	o.entries = verb
	c.Flags().BoolVar(&o.progress, "progress", false, fmt.Sprintf("print how many entries were %s so far, every %d, even when stderr is not a terminal", verb, progressEvery))
}

// entryProgress returns the function that reports the n-th entry done, or nil.
func (o *clientFlags) entryProgress() func(n int64) {
	if o.entries == "" || o.json || !(o.progress || isTerminal(os.Stderr)) {
		return nil
	}
	return func(n int64) {
		if n%progressEvery != 0 {
			return
		}
		if t := o.total.Load(); t > 0 {
			fmt.Fprintf(os.Stderr, "veil: %s %d of %d entries\n", o.entries, n, t)
			return
		}
		fmt.Fprintf(os.Stderr, "veil: %s %d entries\n", o.entries, n)
	}
}
