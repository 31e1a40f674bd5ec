package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
)

// reportPaths ends a command given several paths (rm, mkdir), each of which it attempted
// whatever became of the others, as GNU rm and mkdir do. ok prints a path that went
// through; a failed one is one line on stderr ("veil: PATH: reason"), with --json an
// object {"path": ..., "error": ...} on stdout instead. The exit status follows
// docs/scripting.md: 0 every path went through, 3 some did, 1 none did (or the command
// itself failed: err). Given one path, its failure is the command's error, said once.
func reportPaths(cmd *cobra.Command, asJSON bool, verb string, n int, done []dupless.PathResult, err error, ok func(dupless.PathResult)) error {
	failed := 0
	var first error
	for _, r := range done {
		if r.Err == nil {
			ok(r)
			continue
		}
		failed++
		perr := pathErr(r.Path, r.Err)
		if first == nil {
			first = perr
		}
		if n == 1 || cmd.Context().Err() != nil {
			continue // said by the command's error ("interrupted" once, not per path)
		}
		if asJSON {
			m := names("path", r.Path)
			m["error"] = errorMessage(perr)
			json.NewEncoder(cmd.OutOrStdout()).Encode(m)
		} else {
			fmt.Fprint(cmd.ErrOrStderr(), errorLines(perr))
		}
	}
	switch {
	case n == 1 && first != nil:
		return first
	case err != nil:
		return err
	case failed == 0:
		return nil
	case failed == n:
		return fmt.Errorf("nothing %s: all %s failed", verb, plural(n, "path", "paths"))
	}
	return exitError{fmt.Sprintf("%d of %s failed; the others were %s", failed, plural(n, "path", "paths"), verb), 3}
}
