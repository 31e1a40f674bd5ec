package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/words"
)

func newLsCommand() *cobra.Command {
	var o clientFlags
	var pin pinFlags
	var long bool
	c := &cobra.Command{
		Use:   "ls [PATH]",
		Short: "List stored files and directories",
		Long: `ls lists the entries of a stored directory (default: the root), decrypting their names.
With -l it also shows mode, size, modification time, and a '*' for files stored without
deduplication (the key server was unavailable when they were stored). --json prints one
object per entry, always complete (path, type, size, mode as octal Unix permission bits
such as "0644", mtime, chunks, fallback, error); a path or symlink target that is not valid
UTF-8 also comes as path_bytes or symlink_bytes: its exact bytes in base64, which, decoded,
name the file to every other command. Entries that cannot be read make ls exit with status 3 (with --json
after a last {"error": ..., "exit_code": 3} line).

Examples:
  veil ls
  veil ls -l Documents
  veil ls --json Documents
  veil ls -l --at 2026-11-01 Documents   # as it was at the end of that day (see 'veil snapshots')`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				path := ""
				if len(args) == 1 {
					path = args[0]
				}
				if err := pin.apply(cmd.Context(), cl, path); err != nil {
					return err
				}
				es, err := cl.List(cmd.Context(), path, long || o.json) // JSON is always complete
				if err != nil {
					return deletedHint(cmd.Context(), cl, path, err)
				}
				bad := 0
				for _, e := range es {
					if e.Err != "" {
						bad++
					}
				}
				failed := func() error {
					if bad == 0 {
						return nil
					}
					return exitError{plural(bad, "entry", "entries") + " failed verification", 3}
				}
				out := cmd.OutOrStdout()
				if o.json {
					enc := json.NewEncoder(out)
					for _, e := range es {
						enc.Encode(e)
					}
					return failed()
				}
				// Names are printed outside any column layout (text/tabwriter would treat a
				// 0xff byte as its escape character, garbling every later line), quoted
				// $'...' when they hold a control character or bytes that are not UTF-8.
				type row struct{ mode, size, when, name string }
				rows := make([]row, 0, len(es))
				var w [3]int
				for _, e := range es {
					name := words.Name(lastElem(e.Path))
					if e.IsDir {
						name += "/"
					}
					if e.Symlink != "" {
						name += " -> " + words.Name(e.Symlink)
					}
					if !long {
						if e.Err != "" {
							name += " (" + words.Escape(e.Err) + ")"
						}
						fmt.Fprintln(out, name)
						continue
					}
					r := row{"?", "?", "?", " " + name + " (" + words.Escape(e.Err) + ")"}
					if e.Err == "" {
						mark := " "
						if e.Fallback {
							mark = "*"
						}
						mode, when := e.Mode.String(), e.ModTime.Format(time.DateTime)
						if e.Mode&fs.ModeSymlink != 0 {
							mode = "l" + mode[1:] // as ls(1) shows a link, not Go's "L"
						}
						if e.IsDir && e.ModTime.IsZero() { // made as another's parent (mkdir a/b): no metadata of its own
							mode, when = "d?????????", "?"
						}
						r = row{mode, fmt.Sprint(e.Size), when, mark + name}
					}
					for i, f := range []string{r.mode, r.size, r.when} {
						w[i] = max(w[i], len(f))
					}
					rows = append(rows, r)
				}
				for _, r := range rows {
					if _, err := fmt.Fprintf(out, "%-*s %-*s %-*s %s\n", w[0], r.mode, w[1], r.size, w[2], r.when, r.name); err != nil {
						return err
					}
				}
				return failed()
			})
		},
	}
	o.addFlags(c, false)
	c.Flags().BoolVarP(&long, "long", "l", false, "show mode, size and time (reads each entry's record)")
	pin.add(c, true)
	return c
}

func newRmCommand() *cobra.Command {
	var o clientFlags
	var recursive bool
	c := &cobra.Command{
		Use:   "rm PATH...",
		Short: "Remove stored files (and directories with -r)",
		Long: `rm removes stored files and symlinks, and directories with -r. The content of a removed
file is reclaimed by 'veil prune' (other files of yours may share its chunks). A trailing
slash (NAME/) removes only a folder: never a file of that name. (Stores written before
veil refused a file and a folder of one name may hold both; rm then asks which.) A file
whose stored record is damaged is removed too, and said so: the damaged record is not
kept as a version ('veil check' names the version lost; --json: "damaged").

Several paths are one command: one lock and one snapshot for all of them, and every path
is attempted. A path that fails is one line "veil: PATH: reason" (--json: {"path",
"error"}); rm then exits 3 if others were removed, 1 if none was.

A long rm -r reports progress on stderr every 100 entries (when stderr is a terminal, or
with --progress). rm runs alone: while a put, mv, rm, sync or prune of yours runs on the
same storage (from any device), it stops with "another veil command holds a conflicting
lock", and so do they while it runs; try again when the other is done.

Examples:
  veil rm old.txt
  veil rm -r Documents/drafts/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				done, err := cl.RemoveEach(cmd.Context(), args, recursive)
				return reportPaths(cmd, o.json, "removed", len(args), done, err, func(r dupless.PathResult) {
					s := r.Summary
					if s.Damaged > 0 {
						fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: removed %s; they were not kept as versions "+
							"('veil check' names the versions lost, until 'veil forget' drops the snapshots they are in)\n",
							words.Escape(r.Path), plural(s.Damaged, "damaged record", "damaged records"))
					}
					if o.json {
						out := names("removed", r.Path)
						out["files"], out["dirs"], out["damaged"] = s.Files, s.Dirs, s.Damaged
						json.NewEncoder(cmd.OutOrStdout()).Encode(out)
					}
				})
			})
		},
	}
	o.addFlags(c, false)
	c.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove directories and everything below them")
	o.addProgressFlag(c, "removed")
	return c
}

func newMvCommand() *cobra.Command {
	var o clientFlags
	var resume bool
	c := &cobra.Command{
		Use:   "mv [--resume] SRC DEST | mv --resume",
		Short: "Rename or move a stored file or directory",
		Long: `mv renames SRC to DEST. No content is re-sent: only the small key records are re-sealed
for their new names (records are bound to their names, so the storage service cannot swap
them). DEST must not exist. Each record is written under its new name before the old one
is deleted, so an interrupted mv leaves every file readable under one of the two names,
and running the same mv again finishes it: it moves what is left of SRC into DEST (a
folder's mv leaves a small mark on the storage until it is done, by which it knows DEST
as its own). --resume does that without the mark (an mv of an older veil): it moves what
is left of the folder SRC into the existing folder DEST, and leaves in SRC, reported, any
file DEST holds in another version, and any folder DEST holds as a file (or the reverse).
While a folder's mv that was killed is unfinished, every command that would change SRC,
DEST or a name below them (mv, rm, mkdir, put) refuses, naming it; --resume without SRC
and DEST finishes every unfinished mv, each as running it again would (one that fails does not
stop the others; some finished and some not exits 3); one with nothing left to move (its
SRC and DEST both gone) is dropped, said in one line, no failure. A long mv reports progress on stderr every 100
entries (when stderr is a terminal, or with --progress). mv runs alone, as rm does:
beside another command of yours on the same storage, one of the two stops with "another
veil command holds a conflicting lock".

Examples:
  veil mv notes.txt archive/notes-2025.txt
  veil mv Documents Archive/Documents
  veil mv --resume Documents Archive/Documents
  veil mv --resume`,
		Args: func(cmd *cobra.Command, args []string) error {
			if resume && len(args) == 0 {
				return nil
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				if len(args) == 0 {
					return resumePending(cmd, cl, o.json)
				}
				move := cl.Move
				if resume {
					move = cl.ResumeMove
				}
				if err := move(cmd.Context(), args[0], args[1]); err != nil {
					return err
				}
				if o.json {
					return json.NewEncoder(cmd.OutOrStdout()).Encode(names("moved", args[0], "to", args[1]))
				}
				return nil
			})
		},
	}
	o.addFlags(c, false)
	o.addProgressFlag(c, "moved")
	c.Flags().BoolVar(&resume, "resume", false, "finish an interrupted mv: move what is left of SRC into the existing DEST")
	return c
}

// resumePending is 'veil mv --resume' without SRC and DEST: it finishes every interrupted
// folder mv whose mark names it, and says which (stdout), and what it cannot (stderr). A mv
// with nothing left to move (its source and destination gone) is dropped, one line, no
// failure. Some finished and some not is exit 3, as for rm of several paths.
func resumePending(cmd *cobra.Command, cl *dupless.Client, asJSON bool) error {
	res, err := cl.ResumePending(cmd.Context())
	out := cmd.OutOrStdout()
	for _, m := range res.Done {
		if asJSON {
			if err := json.NewEncoder(out).Encode(names("moved", m.Src, "to", m.Dst)); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "finished the interrupted mv of %s to %s\n", words.Name(m.Src), words.Name(m.Dst))
	}
	for _, m := range res.Dropped {
		if asJSON {
			if err := json.NewEncoder(out).Encode(names("dropped", m.Src, "to", m.Dst)); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "dropped the interrupted mv of %s to %s: neither exists any more, nothing was left to move\n",
			words.Name(m.Src), words.Name(m.Dst))
	}
	if res.Older > 0 {
		verb := map[bool]string{true: "names", false: "name"}[res.Older == 1]
		fmt.Fprintf(cmd.ErrOrStderr(), "veil: %s left by an older veil %s no folders: run each interrupted mv again as you typed it, "+
			"or 'veil mv --resume SRC DEST'\n", words.Count(res.Older, "move mark", "move marks"), verb)
	}
	switch {
	case err != nil && len(res.Done)+len(res.Dropped) > 0 && cmd.Context().Err() == nil:
		return withExit(err, 3)
	case err != nil:
		return err
	case len(res.Done)+len(res.Dropped) == 0 && res.Older == 0 && !asJSON:
		fmt.Fprintln(out, "no interrupted mv to finish")
	}
	return nil
}

func newMkdirCommand() *cobra.Command {
	var o clientFlags
	c := &cobra.Command{
		Use:   "mkdir PATH...",
		Short: "Create stored directories (with their parents)",
		Long: `mkdir creates each stored directory PATH and its missing parents. A directory cannot
have the name of a stored file (nor be below one). Several paths are one command (one
snapshot), each attempted; failures as rm's ('veil rm --help').

Examples:
  veil mkdir Archive/2026
  veil mkdir --json a b`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				done, err := cl.MkdirEach(cmd.Context(), args)
				return reportPaths(cmd, o.json, "created", len(args), done, err, func(r dupless.PathResult) {
					if o.json {
						json.NewEncoder(cmd.OutOrStdout()).Encode(names("created", r.Path))
					}
				})
			})
		},
	}
	o.addFlags(c, false)
	return c
}

func newFindCommand() *cobra.Command {
	var o clientFlags
	c := &cobra.Command{
		Use:   "find NAME",
		Short: "Find stored files and directories by exact name",
		Long: `find prints the path of every stored file or directory named exactly NAME. The storage
service does the search on encrypted names (names encrypt deterministically), so it learns
that you searched for some name it holds, not which. NAME is one whole name: not a
pattern (report*), not a path (Documents/report.pdf; 'veil ls' that). --json prints one
{"path": ...} object per match.

Exit status (as grep's): 0 something was found, 1 nothing is named NAME, 2 find could not
search (no profile, wrong passphrase, storage unreachable, a usage mistake). With --json,
1 and 2 also end the output with {"error": ..., "exit_code": N} (see docs/scripting.md).

Examples:
  veil find report.pdf
  veil find --json notes.txt
  if veil find report.pdf >/dev/null 2>&1; then echo stored; fi`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.with(cmd, func(cl *dupless.Client) error {
				hits, err := cl.Find(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				for _, h := range hits {
					if o.json {
						json.NewEncoder(cmd.OutOrStdout()).Encode(names("path", h))
					} else {
						fmt.Fprintln(cmd.OutOrStdout(), words.Name(h))
					}
				}
				if len(hits) == 0 {
					return errNothingFound
				}
				return nil
			})
			switch {
			case errors.Is(err, errNothingFound) && strings.ContainsAny(args[0], "*?["):
				return withExit(fmt.Errorf("nothing named exactly %q (find matches whole names: no patterns, since the service searches encrypted names)", args[0]), exitNothingFound)
			case errors.Is(err, errNothingFound):
				return withExit(fmt.Errorf("nothing named %q", args[0]), exitNothingFound)
			case err != nil:
				return withExit(err, exitFindFailed)
			}
			return nil
		},
	}
	o.addFlags(c, false)
	return c
}

// find's exit statuses beside 0 (grep's): nothing found, and could not search.
const (
	exitNothingFound = 1
	exitFindFailed   = 2
)

var errNothingFound = errors.New("nothing found")

func newPruneCommand() *cobra.Command {
	var o clientFlags
	var dry, breakLock bool
	var grace time.Duration
	c := &cobra.Command{
		Use:   "prune",
		Short: "Delete stored content no file or snapshot refers to any more",
		Long: `prune reads every key record, and every older version a retained snapshot lists, then
deletes the chunk objects none of them refers to and the kept versions no snapshot lists
(left once 'veil forget' dropped the snapshots that held them). Chunks newer than --grace
are kept, so a put running at the same time never loses content. While a version your
snapshots list is stored damaged, prune deletes no chunks (it cannot tell which that
version refers to), does the rest, names it and exits 3: 'veil forget' the snapshots it
is in, then prune again.

Examples:
  veil prune --dry-run
  veil prune
  veil prune --break-lock   # a killed command's lock from another host; only if none runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				if breakLock {
					broken, err := cl.BreakLocks(cmd.Context())
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: removed %s of other veil commands; a command still running may lose chunks to this prune\n", plural(len(broken), "lock", "locks"))
				}
				res, err := cl.Prune(cmd.Context(), grace, dry)
				if err != nil {
					return err
				}
				if o.json {
					json.NewEncoder(cmd.OutOrStdout()).Encode(res)
				} else {
					printPrune(cmd.OutOrStdout(), dry, res)
				}
				return pruneStatus(res)
			})
		},
	}
	o.addFlags(c, false)
	c.Flags().BoolVarP(&dry, "dry-run", "n", false, "report, delete nothing")
	c.Flags().DurationVar(&grace, "grace", dupless.DefaultGrace, "keep unreferenced chunks younger than this")
	c.Flags().BoolVar(&breakLock, "break-lock", false, "remove every lock first (a killed command's); dangerous if one still runs")
	return c
}
