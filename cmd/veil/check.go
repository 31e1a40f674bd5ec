package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/profile"
	"github.com/veil-project/veil/internal/words"
)

// A user's own checks and figures: veil check, veil stats (no admin access needed).

func init() {
	register(newCheckCommand)
	register(newStatsCommand)
}

func newCheckCommand() *cobra.Command {
	var o clientFlags
	var readData, repair bool
	var subset string
	c := &cobra.Command{
		Use:   "check [--read-data | --read-data-subset N%] [--repair]",
		Short: "Verify your stored files, their versions and their content",
		Long: `check verifies everything you store, without changing anything: every key record of the
newest tree (authenticated under your key and listed by the newest tree root), every older
version your snapshots list, and that every chunk they refer to is stored with the size
its record implies. --read-data also downloads every chunk and verifies it as get does
(chunk tag, guarded decryption, lengths); --read-data-subset N% does that for a random N%
of the chunks (a progress bar on stderr while it reads, when stderr is a terminal).
Damage is reported per file (an older version as "PATH (snapshot N)");
the exit status is 3 if anything is damaged. A version a snapshot lists that is no longer
stored is damage: the storage service lost it, or (where the snapshots allow it, said as
such) a veil older than kept versions replaced it and never kept it.

check also names the folders that have no record ("folder without a record"): folders an
older veil made along the way (put's destination and its parents, mkdir's parents, a mv's
new parents). That is no damage, but 'ls -l' shows them as d????????? and get restores
them 0700. --repair gives each the record veil gives such folders now: drwxr-xr-x, dated
the time of the repair. It never replaces a record, runs alone as mv does, and leaves the
folders an interrupted mv covers until 'veil mv --resume' finishes it (exit 3). --repair
repairs nothing else: damage needs the original ('veil put --force').

Examples:
  veil check
  veil check --read-data-subset 10%
  veil check --read-data --json
  veil check --repair`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := dupless.CheckOptions{ReadData: readData}
			if subset != "" {
				if readData {
					return usageError("choose one of --read-data and --read-data-subset")
				}
				f, err := parsePercent(subset)
				if err != nil {
					return usageError(err.Error())
				}
				opts.Subset = f
			}
			what := "" // a progress bar while it reads content (on a terminal, as put's and get's)
			if opts.ReadData || opts.Subset > 0 {
				what = "verifying"
			}
			cl, done, ui, err := o.open(cmd, what)
			if err != nil {
				return err
			}
			defer done()
			res, err := cl.Check(cmd.Context(), opts)
			ui.finish()
			if err != nil {
				return err
			}
			var rep *dupless.FolderRepair
			if repair {
				rep = &dupless.FolderRepair{Recorded: []string{}, Pending: []string{}}
				if len(res.Unrecorded) > 0 { // found with no lock: RecordFolders looks again under it
					if rep, err = cl.RecordFolders(cmd.Context()); err != nil {
						return fmt.Errorf("give the folders without a record one: %w", err)
					}
				}
			}
			out := cmd.OutOrStdout()
			if o.json {
				json.NewEncoder(out).Encode(checkJSON{res, rep})
			} else {
				printCheck(out, res, rep)
			}
			if n := len(res.Problems); n > 0 {
				what := plural(n, "damaged file or version", "damaged files or versions")
				if d := res.SnapshotsDamaged; d > 0 {
					what = plural(n, "problem", "problems") + " (" + plural(d, "damaged snapshot", "damaged snapshots") + ")"
				}
				return exitError{"check found " + what, 3}
			}
			if n := len(res.Pending); n > 0 {
				return exitError{"check found " + plural(n, "entry", "entries") + " left by an interrupted mv: run 'veil mv --resume' to finish it", 3}
			}
			if rep != nil && len(rep.Pending) > 0 {
				return exitError{"check --repair left " + plural(len(rep.Pending), "folder", "folders") +
					" without a record: an interrupted mv covers them; run 'veil mv --resume', then 'veil check --repair' again", 3}
			}
			return nil
		},
	}
	o.addFlags(c, false)
	c.Flags().BoolVar(&readData, "read-data", false, "download and verify every chunk")
	c.Flags().StringVar(&subset, "read-data-subset", "", "download and verify this share of the chunks, chosen at random (e.g. 10%)")
	c.Flags().BoolVar(&repair, "repair", false, "give the folders without a record one (drwxr-xr-x, dated now)")
	return c
}

// checkJSON is check's --json: its result, and with --repair what the repair did.
type checkJSON struct {
	*dupless.CheckResult
	Repair *dupless.FolderRepair `json:"repair,omitempty"`
}

// printCheck writes check's text output: the damage, then the folders without a record
// (and what --repair did of them, rep non-nil).
func printCheck(out io.Writer, res *dupless.CheckResult, rep *dupless.FolderRepair) {
	for _, p := range res.Problems {
		fmt.Fprintf(out, "damaged: %s: %s\n", words.Name(p.Path), words.Escape(p.Err))
	}
	for _, p := range res.Pending { // no damage: the mv run again finishes them
		fmt.Fprintf(out, "pending: %s: %s\n", words.Name(p.Path), words.Escape(p.Err))
	}
	found := res.Unrecorded
	if rep != nil && len(rep.Pending) > 0 { // named below, as left: once each
		left := make(map[string]bool, len(rep.Pending))
		for _, d := range rep.Pending {
			left[d] = true
		}
		found = slices.DeleteFunc(slices.Clone(found), func(d string) bool { return left[d] })
	}
	folderLines(out, "folder without a record", found)
	fmt.Fprintf(out, "checked %s, %s, %s (%s), %s present, %d read and verified (%s) in %s: ",
		plural(res.Files, "file", "files"), plural(res.Dirs, "dir", "dirs"), plural(res.Snapshots, "snapshot", "snapshots"),
		plural(res.Versions, "older version", "older versions"), plural(res.Chunks, "chunk", "chunks"), res.ChunksRead,
		humanBytes(res.BytesRead), res.Duration.Round(1e6))
	if len(res.Problems) == 0 {
		fmt.Fprintln(out, "no damage")
	} else {
		fmt.Fprintln(out, plural(len(res.Problems), "problem", "problems"))
	}
	if len(res.Problems) > res.Clashes+res.SnapshotsDamaged { // a clash, a damaged snapshot say their own repair
		// put --force sends every chunk again, and the service replaces a
		// stored blob that no longer matches its hash (found by a user
		// walkthrough: rm and put repaired nothing with content in S3).
		fmt.Fprintln(out, "to repair a damaged file whose original you still have: put it again with --force into its folder ('veil put --force LOCALFILE --to FOLDER'); its older versions stay in your snapshots")
	}
	if res.SnapshotsDamaged > 0 {
		fmt.Fprintf(out, "%d of the problems are snapshots whose tree root (or its base) is damaged or missing; "+
			"prune stops while they are retained: 'veil forget --drop-damaged' drops them\n", res.SnapshotsDamaged)
	}
	if res.VersionsMissing > 0 {
		fmt.Fprintf(out, "%d of the problems are versions your snapshots list that are no longer stored; "+
			"to stop listing them, 'veil forget' the snapshots they are in (e.g. --keep-last N keeps the N newest)\n", res.VersionsMissing)
	}
	if res.VersionsDamaged > 0 { // prune deletes no chunks while they are listed
		fmt.Fprintf(out, "%d of the problems are versions your snapshots list whose stored copy is damaged; prune deletes no chunks while "+
			"they are listed: 'veil forget' the snapshots they are in (e.g. --keep-last N keeps the N newest)\n", res.VersionsDamaged)
	}
	switch {
	case rep != nil:
		if n := len(rep.Recorded); n > 0 {
			fmt.Fprintf(out, "wrote the missing record of %s: drwxr-xr-x, dated now\n", plural(n, "folder", "folders"))
		}
		folderLines(out, "left without a record (an interrupted mv covers it)", rep.Pending)
	case len(res.Unrecorded) > 0:
		n, have := len(res.Unrecorded), "have"
		if n == 1 {
			have = "has"
		}
		fmt.Fprintf(out, "%s %s no record (an older veil made them along the way; no damage): 'ls -l' shows them as d?????????, "+
			"and get restores them 0700; 'veil check --repair' gives them one (drwxr-xr-x, dated now)\n", plural(n, "folder", "folders"), have)
	}
}

// maxFolderLines bounds the folders check names one per line (an older veil's tree may
// have thousands); --json lists them all.
const maxFolderLines = 20

// folderLines writes "what: FOLDER/" for each of dirs, up to maxFolderLines of them.
func folderLines(out io.Writer, what string, dirs []string) {
	for i, d := range dirs {
		if i == maxFolderLines {
			fmt.Fprintf(out, "%s: and %d more (--json lists them all)\n", what, len(dirs)-i)
			return
		}
		fmt.Fprintf(out, "%s: %s/\n", what, words.Name(d))
	}
}

// parsePercent reads "10%" (or "0.1") as a fraction in (0, 1].
func parsePercent(s string) (float64, error) {
	v, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && pct {
		f /= 100
	}
	if err != nil || f <= 0 || f > 1 {
		return 0, fmt.Errorf("--read-data-subset %q: give a percentage in (0%%, 100%%], e.g. 10%%", s)
	}
	return f, nil
}

func newStatsCommand() *cobra.Command {
	var o clientFlags
	c := &cobra.Command{
		Use:   "stats",
		Short: "What you store: files, bytes, versions, and what they cost after deduplication",
		Long: `stats adds up your own records (no admin access to the storage service needed): the
files, symlinks, folders and logical bytes of your newest tree, the snapshots you keep and
the file versions in them, and the distinct chunks all of those refer to with their
ciphertext bytes (what your versions cost after your own deduplication; the storage
service may share chunks with other users too). It reads every record once.

Examples:
  veil stats
  veil stats --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				st, err := cl.Stats(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if o.json {
					return json.NewEncoder(out).Encode(st)
				}
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintf(tw, "files\t%d (%s)\n", st.Files, humanBytes(st.Bytes))
				fmt.Fprintf(tw, "symlinks\t%d\n", st.Symlinks)
				fmt.Fprintf(tw, "folders\t%d\n", st.Dirs)
				if st.Fallback > 0 {
					again := "put them again"
					if cfg, err := profile.Load(o.dir(), profile.Overrides{}); err == nil && cfg.NoKS {
						again = "the profile has no key server" // its choice (init said so): putting again changes nothing
					}
					fmt.Fprintf(tw, "without dedup\t%s (stored under random keys; %s)\n", plural(st.Fallback, "file", "files"), again)
				}
				fmt.Fprintf(tw, "snapshots\t%d\n", st.Snapshots)
				fmt.Fprintf(tw, "file versions\t%d (%s)\n", st.Versions, humanBytes(st.VersionBytes))
				if st.Missing > 0 {
					fmt.Fprintf(tw, "versions not stored\t%d (damage: 'veil check' names them)\n", st.Missing)
				}
				if st.Damaged > 0 {
					fmt.Fprintf(tw, "versions damaged\t%d (not counted below; 'veil check' names them)\n", st.Damaged)
				}
				fmt.Fprintf(tw, "chunks\t%d (%s stored)\n", st.Chunks, humanBytes(st.StoredBytes))
				return tw.Flush()
			})
		},
	}
	o.addFlags(c, false)
	return c
}
