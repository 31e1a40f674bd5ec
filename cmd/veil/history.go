package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/words"
)

// History commands: log, snapshots, forget, and the --at/--version/--snapshot flags of get
// and ls (docs/design.md, "History").

func init() {
	for _, f := range []func() *cobra.Command{newLogCommand, newSnapshotsCommand, newForgetCommand} {
		register(f)
	}
}

// pinFlags choose a point in history for a reading command.
type pinFlags struct {
	at       string
	version  int
	snapshot uint64
	when     time.Time // at, read by check
}

func (p *pinFlags) add(c *cobra.Command, versions bool) {
	c.Flags().StringVar(&p.at, "at", "", "as it was at this time: 2026-11-23, \"2026-11-23 14:00\", RFC 3339, or an age (90m, 36h, 7d)")
	c.Flags().Uint64Var(&p.snapshot, "snapshot", 0, "as snapshot number N left it (see 'veil snapshots')")
	if versions {
		c.Flags().IntVar(&p.version, "version", 0, "version N of the path, as 'veil log' numbers them (1 = oldest)")
	}
	c.PreRunE = func(cmd *cobra.Command, _ []string) error { return p.check(cmd) } // before RunE opens the profile
}

// check finds the usage mistakes of the flags cmd was given (add runs it before the
// command's RunE), before the command asks for the passphrase or unlocks the profile (found by a user walkthrough: a mistyped --at was
// refused only after the passphrase was typed).
func (p *pinFlags) check(cmd *cobra.Command) error {
	given := func(name string) bool { return cmd.Flags().Changed(name) }
	set := 0
	for _, name := range []string{"at", "version", "snapshot"} {
		if given(name) {
			set++
		}
	}
	switch {
	case set > 1:
		return usageError("choose one of --at, --version and --snapshot")
	case given("version") && p.version < 1:
		return usageError("--version counts from 1")
	case given("snapshot") && p.snapshot == 0:
		return usageError("--snapshot counts from 1 (see 'veil snapshots')")
	case given("at"):
		t, err := dupless.ParseWhen(p.at, time.Now())
		if err != nil {
			return usageError(err.Error())
		}
		p.when = t
	}
	return nil
}

// apply pins cl to the point check found (nothing chosen: the newest). path is what
// --version counts the versions of.
func (p *pinFlags) apply(ctx context.Context, cl *dupless.Client, path string) error {
	var err error
	switch {
	case !p.when.IsZero():
		_, err = cl.PinTime(ctx, p.when)
	case p.version != 0:
		_, err = cl.PinVersion(ctx, path, p.version)
	case p.snapshot != 0:
		_, err = cl.PinSnapshot(ctx, p.snapshot)
	}
	return err
}

func newLogCommand() *cobra.Command {
	var o clientFlags
	c := &cobra.Command{
		Use:   "log [PATH]",
		Short: "List the versions of a stored file or folder",
		Long: `log lists the versions of PATH (a file, a symlink or a folder; default: everything) kept
in your snapshots, oldest first. Every put, mv, rm or mkdir that changes your files leaves a
snapshot, and a file that a put changes keeps its previous version (its content is
deduplicated, so an old version costs only the chunks that differ). A folder's version is
the state of everything below it. A deletion is listed as "deleted". A version whose record
cannot be read is listed with the reason, and makes log exit with status 3.

Retrieve a version with 'veil get --version N PATH', or any point in time with
'veil get --at TIME PATH'; drop old snapshots with 'veil forget'.

Examples:
  veil log Documents/report.pdf
  veil get --version 1 Documents/report.pdf /tmp/report-v1.pdf
  veil log --json Documents`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				path := ""
				if len(args) == 1 {
					path = args[0]
				}
				vs, err := cl.Log(cmd.Context(), path)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if o.json {
					if err := json.NewEncoder(out).Encode(vs); err != nil {
						return err
					}
					return unreadableVersions(vs)
				}
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "VERSION\tSNAPSHOT\tSTORED\tSIZE\tMODIFIED")
				for _, v := range vs {
					stored := v.Time.Local().Format(time.DateTime)
					switch {
					case v.Deleted:
						fmt.Fprintf(tw, "-\t%d\t%s\tdeleted\t\n", v.Seq, stored)
					case v.IsDir:
						fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t\n", v.N, v.Seq, stored, plural(v.Files, "file", "files"))
					case v.Err != "":
						fmt.Fprintf(tw, "%d\t%d\t%s\t?\t(%s)\n", v.N, v.Seq, stored, words.Escape(v.Err))
					default:
						fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", v.N, v.Seq, stored, humanBytes(v.Size), v.ModTime.Local().Format(time.DateTime))
					}
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				return unreadableVersions(vs)
			})
		},
	}
	o.addFlags(c, false)
	return c
}

// unreadableVersions is the exit of a log that listed versions it could not read (their
// reason in the listing): 3, as ls's entries that fail verification.
func unreadableVersions(vs []dupless.Version) error {
	n := 0
	for _, v := range vs {
		if v.Err != "" {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return exitError{plural(n, "version", "versions") + " could not be read (the listing says why; 'veil check' names the damage)", 3}
}

func newSnapshotsCommand() *cobra.Command {
	var o clientFlags
	c := &cobra.Command{
		Use:   "snapshots",
		Short: "List your snapshots (points in time you can read back)",
		Long: `snapshots lists the retained snapshots of your stored files, oldest first. Each command
that changes them (put, mv, rm, mkdir) leaves one: the authenticated tree root that lists
every file as the command left it. Read one back with 'veil ls --snapshot N' or
'veil get --snapshot N PATH' (or --at TIME); drop old ones with 'veil forget'.

An older snapshot whose tree root (or the tree base it names) is damaged or missing is
listed as "damaged", its reason below the table, and the command exits 3, as 'veil check'
does for damage; 'veil forget --drop-damaged' drops it.

Examples:
  veil snapshots
  veil ls --snapshot 3 Documents
  veil snapshots --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				snaps, err := cl.Snapshots(cmd.Context())
				if err != nil {
					return err
				}
				if err := printSnapshots(cmd, o.json, snaps); err != nil {
					return err
				}
				return damagedSnapshots(snaps)
			})
		},
	}
	o.addFlags(c, false)
	return c
}

func printSnapshots(cmd *cobra.Command, asJSON bool, snaps []dupless.Snapshot) error {
	out := cmd.OutOrStdout()
	if asJSON {
		if snaps == nil {
			snaps = []dupless.Snapshot{}
		}
		return json.NewEncoder(out).Encode(snaps)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SNAPSHOT\tTIME\tFILES\tRECORDS")
	var damaged []string
	for _, s := range snaps {
		if s.Damaged != "" {
			fmt.Fprintf(tw, "%d\tdamaged\t\t\n", s.Seq)
			damaged = append(damaged, fmt.Sprintf("snapshot %d: %s", s.Seq, s.Damaged))
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\n", s.Seq, s.Time.Local().Format(time.DateTime), s.Files, s.Records)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range damaged {
		fmt.Fprintln(out, d)
	}
	return nil
}

// damagedSnapshots is the exit of a listing that showed damaged snapshots: 3, as check's
// damage, with the way out.
func damagedSnapshots(snaps []dupless.Snapshot) error {
	n := 0
	for _, s := range snaps {
		if s.Damaged != "" {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return exitError{fmt.Sprintf("%s cannot be read; 'veil forget --drop-damaged' drops %s ('veil check' checks the rest)",
		plural(n, "damaged snapshot", "damaged snapshots"), map[bool]string{true: "it", false: "them"}[n == 1]), 3}
}

func newForgetCommand() *cobra.Command {
	var o clientFlags
	var p dupless.Policy
	var dry, prune bool
	var grace time.Duration
	c := &cobra.Command{
		Use:   "forget --keep-... [--prune]",
		Short: "Drop old snapshots by a retention policy (then prune frees their content)",
		Long: `forget drops the snapshots the policy does not keep, as restic's forget does: the newest
--keep-last N, the newest snapshot of each of the last N hours, days, ISO weeks, months or
years that have one (--keep-hourly, --keep-daily, --keep-weekly, --keep-monthly,
--keep-yearly; local time), and every snapshot taken within --keep-within of the newest.
The newest snapshot is always kept. At least one --keep option (or --drop-damaged) is
required.

A snapshot whose tree root, or the tree base it names, is damaged or missing cannot be
read: forget stops, naming it, rather than judge it by a policy. --drop-damaged drops every
such snapshot except the newest (one line each: "dropped damaged snapshot N: reason"),
with the policy applied to the readable ones; alone, it keeps every readable snapshot.
The newest snapshot damaged is not dropped: see 'veil root'.

Forgetting frees nothing by itself: content that only dropped snapshots referenced is
deleted by 'veil prune' (or --prune here). Prune never deletes what a retained snapshot
references.

Examples:
  veil forget --keep-last 10 --dry-run
  veil forget --keep-daily 7 --keep-weekly 4 --keep-monthly 12 --prune
  veil forget --keep-within 720h --json
  veil forget --drop-damaged --keep-last 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := negativeKeep(cmd); err != nil {
				return err
			}
			if p.Empty() {
				return usageError("forget needs a policy: at least one of --keep-last, --keep-hourly, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-within, --drop-damaged")
			}
			return o.with(cmd, func(cl *dupless.Client) error {
				res, err := cl.Forget(cmd.Context(), p, dry)
				if err != nil {
					return err
				}
				var pr *dupless.PruneResult
				if prune && !dry {
					if pr, err = cl.Prune(cmd.Context(), grace, false); err != nil {
						return fmt.Errorf("forgot %s; prune: %w", plural(len(res.Remove), "snapshot", "snapshots"), err)
					}
				}
				return printForget(cmd, o.json, dry, res, pr)
			})
		},
	}
	o.addFlags(c, false)
	c.Flags().IntVar(&p.Last, "keep-last", 0, "keep the newest N snapshots")
	c.Flags().IntVar(&p.Hourly, "keep-hourly", 0, "keep the newest snapshot of each of the last N hours that have one")
	c.Flags().IntVar(&p.Daily, "keep-daily", 0, "keep the newest snapshot of each of the last N days that have one")
	c.Flags().IntVar(&p.Weekly, "keep-weekly", 0, "keep the newest snapshot of each of the last N weeks that have one")
	c.Flags().IntVar(&p.Monthly, "keep-monthly", 0, "keep the newest snapshot of each of the last N months that have one")
	c.Flags().IntVar(&p.Yearly, "keep-yearly", 0, "keep the newest snapshot of each of the last N years that have one")
	c.Flags().DurationVar(&p.Within, "keep-within", 0, "keep every snapshot taken within this long of the newest (e.g. 720h)")
	c.Flags().BoolVar(&p.DropDamaged, "drop-damaged", false, "also drop every snapshot but the newest whose tree root or base is damaged or missing")
	c.Flags().BoolVarP(&dry, "dry-run", "n", false, "list what would be dropped, drop nothing")
	c.Flags().BoolVar(&prune, "prune", false, "run prune afterwards")
	c.Flags().DurationVar(&grace, "grace", time.Hour, "with --prune: keep unreferenced content younger than this")
	return c
}

// negativeKeep refuses a --keep option given a negative count or duration, which forget
// took for "not given": 'forget --keep-last -1' said it "needs a policy" (found by a user
// walkthrough), and beside another option the mistake went unsaid.
func negativeKeep(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err == nil && strings.HasPrefix(f.Name, "keep-") && strings.HasPrefix(f.Value.String(), "-") {
			want := "a number of snapshots, at least 1"
			if f.Value.Type() == "duration" {
				want = "a positive duration, such as 720h"
			}
			err = usageError(fmt.Sprintf("--%s %s: give %s", f.Name, f.Value, want))
		}
	})
	return err
}

func printForget(cmd *cobra.Command, asJSON, dry bool, res *dupless.ForgetResult, pr *dupless.PruneResult) error {
	out := cmd.OutOrStdout()
	if asJSON {
		if err := json.NewEncoder(out).Encode(struct {
			*dupless.ForgetResult
			DryRun bool                 `json:"dry_run"`
			Prune  *dupless.PruneResult `json:"prune,omitempty"`
		}{res, dry, pr}); err != nil {
			return err
		}
		return pruneStatus(pr)
	}
	verb := "dropped"
	if dry {
		verb = "would drop"
	}
	for _, d := range res.Damaged {
		fmt.Fprintf(out, "%s damaged snapshot %d: %s\n", verb, d.Seq, words.Escape(d.Err))
	}
	var seqs []uint64
	for _, s := range res.Remove {
		seqs = append(seqs, s.Seq)
	}
	for _, d := range res.Damaged {
		seqs = append(seqs, d.Seq)
	}
	slices.Sort(seqs)
	var nums []string
	for _, s := range seqs {
		nums = append(nums, fmt.Sprint(s))
	}
	list := ""
	if len(nums) > 0 {
		list = " (" + strings.Join(nums, ", ") + ")"
	}
	fmt.Fprintf(out, "kept %s; %s %d%s\n", plural(len(res.Keep), "snapshot", "snapshots"), verb, len(res.Remove)+len(res.Damaged), list)
	if pr != nil {
		printPrune(out, false, pr)
	}
	return pruneStatus(pr)
}

// printPrune prints prune's result (text).
func printPrune(out io.Writer, dry bool, res *dupless.PruneResult) {
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	fmt.Fprintf(out, "%s and %s in %s reference %s; %s %s and %s (%s); %d kept as too recent\n",
		plural(res.Records, "record", "records"), plural(res.Versions, "older version", "older versions"), plural(res.Snapshots, "snapshot", "snapshots"),
		plural(res.ChunksInUse, "chunk", "chunks"), verb, plural(res.ChunksRemoved, "unreferenced chunk", "unreferenced chunks"),
		plural(res.VersionsRemoved, "version", "versions"), humanBytes(res.BytesRemoved), res.ChunksTooYoung)
	if res.NamesRemoved > 0 {
		fmt.Fprintf(out, "%s %s no stored path or snapshot uses\n", verb, plural(res.NamesRemoved, "long name's object", "long names' objects"))
	}
	if res.BasesRemoved > 0 {
		fmt.Fprintf(out, "%s %s no retained snapshot uses\n", verb, plural(res.BasesRemoved, "tree base", "tree bases"))
	}
	if res.VersionsMissing > 0 {
		fmt.Fprintf(out, "%s listed by snapshots not stored ('veil check' names them)\n", plural(res.VersionsMissing, "version", "versions"))
	}
	if res.VersionsDamaged > 0 {
		fmt.Fprintf(out, "%s listed by snapshots damaged (first: %s), so %s kept: "+
			"which chunks those versions refer to cannot be read\n", plural(res.VersionsDamaged, "version", "versions"), words.Escape(res.Damaged[0]),
			plural(res.ChunksHeld, "unreferenced chunk", "unreferenced chunks"))
	}
}

// pruneStatus is prune's exit: 3 when damaged versions kept it from deleting chunks (the
// rest of prune went through).
func pruneStatus(res *dupless.PruneResult) error {
	if res == nil || res.VersionsDamaged == 0 {
		return nil
	}
	return exitError{fmt.Sprintf("prune deleted no chunks: %s your snapshots list damaged (first: %s; 'veil check' names them); "+
		"'veil forget' the snapshots they are in, then prune again", plural(res.VersionsDamaged, "version", "versions"), res.Damaged[0]), 3}
}
