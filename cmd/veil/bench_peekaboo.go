package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/bench/peekaboo"
)

func init() { registerBench(newBenchPeekabooCommand) }

func newBenchPeekabooCommand() *cobra.Command {
	var asJSON bool
	var cfg pkbbench.Config
	c := &cobra.Command{
		Use:   "peekaboo",
		Short: "The Peekaboo report's Figs. 9-11, throughput and bulk publication",
		Long: `peekaboo starts a real K-server and V-server on loopback (TLS, mutual TLS between them,
in a temporary directory) and a plain key-value server without privacy (the report's
"regular" baseline: same index, same TLS), publishes the same pairs to both and measures:

  publish     bulk publication of all pairs in one call: time, bytes on each server
  fig9        search latency vs pairs, plain vs Peekaboo, basic/advanced, exact/substring
              (exact: 1 match; substring: up to 100 matches, the first 100 returned)
  fig10       where one search's time goes, beside the report's table (at 10^5 pairs)
  fig11       K-server access control with 1, 2, 4 pseudonyms, with and without caching
  pir         private queries (--private-query: two-server PIR) beside basic exact search:
              latency, reply bytes, process CPU per query, each server's CPU per query
  throughput  searches/s from --clients concurrent clients, mixing off and on

Latency runs use mixing off (batch 1) to show the protocol's own cost.

Examples:
  veil bench peekaboo
  veil bench peekaboo --sizes 1000,100000 --queries 100 --json
  veil bench peekaboo --sizes 100000,1000000 --only pir`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			if !asJSON {
				fmt.Fprintln(tw, "experiment\tpairs\twhat\tp50 us\tp90 us\tmean us\tx plain\t/s\tbytes\ts\tpaper\t")
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			err := pkbbench.Run(cmd.Context(), cfg, func(r pkbbench.Row) {
				if asJSON {
					enc.Encode(r)
					return
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Experiment, r.Pairs, r.What,
					blankZero("%.0f", r.P50us), blankZero("%.0f", r.P90us), blankZero("%.0f", r.MeanUs), blankZero("%.2f", r.Ratio),
					blankZero("%.0f", r.PerSec), blankZero("%.0f", float64(r.Bytes)), blankZero("%.1f", r.Seconds), r.Paper)
			})
			tw.Flush()
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	c.Flags().IntSliceVar(&cfg.Sizes, "sizes", []int{1e3, 1e4, 1e5, 1e6}, "numbers of indexed pairs")
	c.Flags().IntVar(&cfg.Queries, "queries", 300, "searches per latency point")
	c.Flags().IntVar(&cfg.Clients, "clients", 16, "concurrent clients for throughput")
	c.Flags().DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each throughput run")
	c.Flags().StringSliceVar(&cfg.Only, "only", nil, "run only these experiments after publishing ("+strings.Join(pkbbench.Experiments, ", ")+")")
	return c
}
