package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/words"
)

// put's selection flags: --exclude-file, --files-from, --dry-run.
type putSelection struct {
	excludeFiles, filesFrom []string
	dryRun                  bool
}

func (s *putSelection) addPutFlags(c *cobra.Command) {
	c.Flags().StringArrayVar(&s.excludeFiles, "exclude-file", nil, "read --exclude patterns from this file, one per line (# comments; repeatable)")
	c.Flags().StringArrayVar(&s.filesFrom, "files-from", nil, `read PATHs from this file, one per line ("-": standard input; repeatable)`)
	c.Flags().BoolVarP(&s.dryRun, "dry-run", "n", false, "list what would be stored and where; store nothing")
}

// apply adds the patterns and paths the files name to o.exclude and srcs.
func (s *putSelection) apply(o *clientFlags, srcs *[]string) error {
	for _, f := range s.excludeFiles {
		lines, err := readLines(f, true)
		if err != nil {
			return fmt.Errorf("--exclude-file: %w", err)
		}
		o.exclude = append(o.exclude, lines...)
	}
	for _, f := range s.filesFrom {
		lines, err := readLines(f, false)
		if err != nil {
			return fmt.Errorf("--files-from: %w", err)
		}
		*srcs = append(*srcs, lines...)
	}
	return nil
}

// readLines reads the non-empty lines of a file ("-": standard input), without their line
// endings; with comments, lines starting with # are skipped too. Paths keep their spaces.
func readLines(path string, comments bool) ([]string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(l) == "" || comments && strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if comments {
			l = strings.TrimSpace(l)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// printPlan prints what put would store (put --dry-run).
func printPlan(w io.Writer, o *clientFlags, cl *dupless.Client, srcs []string, dest string) error {
	plan, sum, err := cl.Plan(srcs, dest)
	if err != nil {
		return err
	}
	if o.json {
		return json.NewEncoder(w).Encode(map[string]any{"dry_run": true, "entries": plan, "files": sum.Files, "dirs": sum.Dirs,
			"symlinks": sum.Symlinks, "bytes": sum.Bytes, "excluded": sum.Excluded, "not_stored": sum.NotStored, "errors": sum.Errors})
	}
	for _, p := range plan {
		fmt.Fprintf(w, "%s -> %s (%s)\n", words.Name(p.Local), words.Name(p.Dest), p.Type)
	}
	fmt.Fprintf(w, "would store %s, %s, %s, %s; %d excluded%s (dry run: nothing stored)\n", plural(sum.Files, "file", "files"),
		plural(sum.Dirs, "dir", "dirs"), plural(sum.Symlinks, "link", "links"), humanBytes(sum.Bytes), sum.Excluded, notStored(sum.NotStored))
	if perr := sum.Err(); perr != nil {
		return exitError{perr.Error(), 3}
	}
	return nil
}
