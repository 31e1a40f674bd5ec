package main

import (
	"os"

	"github.com/spf13/cobra"

	storebench "github.com/veil-project/veil/internal/bench/store"
)

func newStoreNodesBenchCommand() *cobra.Command {
	var opts storebench.NodesOptions
	c := &cobra.Command{
		Use:   "store-nodes",
		Short: "4 KiB puts/s: two store nodes sharing PostgreSQL vs one bbolt node",
		Long: `store-nodes starts a PostgreSQL server (initdb in a temp dir, fsync on), one 'veil store serve'
with its metadata in bbolt, and two 'veil store serve' nodes sharing the PostgreSQL database,
then measures 4 KiB puts/s with --clients concurrent clients (spread over the nodes), the
two set-ups alternating --rounds times in one run, with the CPU per put spent by the nodes
and by PostgreSQL (from /proc). Needs Debian's postgresql (scripts/install-deps).

  veil bench store-nodes
  veil bench store-nodes --clients 32 --seconds 10 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			opts.Veil = self
			return storebench.RunNodes(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	d := storebench.DefaultNodesOptions()
	c.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per line")
	c.Flags().Float64Var(&opts.Seconds, "seconds", d.Seconds, "time spent on each measurement")
	c.Flags().IntVar(&opts.Clients, "clients", d.Clients, "concurrent clients")
	c.Flags().IntVar(&opts.Rounds, "rounds", d.Rounds, "how many times the two set-ups alternate")
	return c
}
