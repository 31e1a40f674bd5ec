package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	metalbench "github.com/veil-project/veil/internal/bench/metal"
)

func runBenchMetalShare(cmd *cobra.Command, cfg metalbench.ShareConfig, asJSON bool) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "rtt ms\top\tn\tmean ms\tmin ms\tentries\tbytes\tB/entry\tdecrypt ms\tpaper\t")
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	err := metalbench.RunShare(cmd.Context(), cfg, func(r metalbench.ShareRow) {
		if asJSON {
			enc.Encode(r)
			return
		}
		perEntry := ""
		if r.Entries > 0 {
			perEntry = fmt.Sprintf("%.1f", float64(r.Bytes)/float64(r.Entries))
		}
		fmt.Fprintf(tw, "%.0f\t%s\t%d\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", r.RTTms, r.Op, r.N, r.MeanMs, r.MinMs,
			blankZero("%.0f", float64(r.Entries)), blankZero("%.0f", float64(r.Bytes)), perEntry, blankZero("%.1f", r.DecryptMs), r.Paper)
	})
	tw.Flush()
	return err
}
