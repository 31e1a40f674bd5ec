package main

import (
	"encoding/json"
	"fmt"
	"github.com/dustin/go-humanize"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/bench/dupless"
)

func init() { registerBench(newBenchDuplessCommand) }

func newBenchDuplessCommand() *cobra.Command {
	var asJSON bool
	var cfg duplessbench.Config
	var maxSize int64
	var maxSizeFlag, minSizeFlag string
	c := &cobra.Command{
		Use:   "dupless",
		Short: "The DupLESS paper's client experiments: put breakdown, put/get vs plain, overhead",
		Long: `dupless starts a real all-in-one deployment on loopback (key server + storage service
over TLS, in a temporary directory), creates a user, and measures through the real client:

  fig5      where the time of one 1 MB put goes (chunk+hash, key server, encryption,
            upload, key record), as in the paper's Fig. 5
  fig6-7    put and get of 1 KB .. 64 MB files against a plain put/get of the same bytes
            to the same storage service, and bytes sent (Figs. 6 and 7); each veil run
            alternates with a plain one, and --json adds the CPU time of each (cpu_ms,
            plain_cpu_ms: client and servers, all in this process)
  overhead  bytes stored per file beyond its content, for names of 1..100 bytes
            (paper: 3n+120)

Every file is fresh random data, so nothing deduplicates. Medians over --reps runs (and at
least --min-time per point). --rtt puts a link of that round-trip time between the client
and both servers (loopback's own is ~0.05 ms), so that an operation's sequential round
trips show as they would against a service across a network.

Examples:
  veil bench dupless
  veil bench dupless --json --max-size 4MiB
  veil bench dupless --reps 3 --min-size 64MiB   # the 64 MiB row only
  veil bench dupless --max-size 4KiB --rtt 10ms  # small files, 10 ms from the servers`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := humanize.ParseBytes(maxSizeFlag)
			if err != nil {
				return fmt.Errorf("--max-size %q: %w", maxSizeFlag, err)
			}
			maxSize = int64(n)
			lo, err := humanize.ParseBytes(minSizeFlag)
			if err != nil {
				return fmt.Errorf("--min-size %q: %w", minSizeFlag, err)
			}
			for _, s := range duplessbench.DefaultSizes {
				if (maxSize == 0 || s <= maxSize) && s >= int64(lo) {
					cfg.Sizes = append(cfg.Sizes, s)
				}
			}
			if len(cfg.Sizes) == 0 {
				return fmt.Errorf("--min-size %s --max-size %s: no size of fig6-7 (1KiB..64MiB, powers of 4) in between", minSizeFlag, maxSizeFlag)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "experiment\twhat\tsize\tveil ms\tplain ms\tratio\tbytes sent\toverhead B\tpaper\t")
			enc := json.NewEncoder(cmd.OutOrStdout())
			err = duplessbench.Run(cmd.Context(), cfg, func(r duplessbench.Row) {
				if asJSON {
					enc.Encode(r)
					return
				}
				fmt.Fprintf(progressOut(cmd), "\r\033[K%s %s %s", r.Experiment, r.What, humanBytes(r.Size))
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", r.Experiment, r.What, humanBytes(r.Size), r.Ms,
					blankZero("%.2f", r.PlainMs), blankZero("%.2fx", r.Ratio), blankZero("%.0f", float64(r.BytesSent)),
					blankZero("%.0f", float64(r.Overhead)), r.Paper)
			})
			fmt.Fprint(progressOut(cmd), "\r\033[K")
			if !asJSON {
				tw.Flush()
			}
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	d := duplessbench.DefaultConfig()
	c.Flags().IntVar(&cfg.Reps, "reps", d.Reps, "runs per point (at least)")
	c.Flags().DurationVar(&cfg.MinTime, "min-time", d.MinTime, "time per point (at least)")
	c.Flags().DurationVar(&cfg.RTT, "rtt", 0, "round-trip time of a simulated link to the servers (e.g. 10ms; 0: loopback)")
	c.Flags().StringVar(&minSizeFlag, "min-size", "0", "smallest file size for fig6-7 (e.g. 64MiB)")
	c.Flags().StringVar(&maxSizeFlag, "max-size", exactBytes(d.Sizes[len(d.Sizes)-1]), "largest file size for fig6-7 (e.g. 4MiB, 1048576)")
	return c
}

func blankZero(format string, v float64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf(format, v)
}
