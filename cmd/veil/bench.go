package main

import "github.com/spf13/cobra"

// benchSubs are the 'veil bench' subcommands; each group adds its own with registerBench.
var benchSubs []func() *cobra.Command

func registerBench(f func() *cobra.Command) { benchSubs = append(benchSubs, f) }

func init() {
	register(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "bench",
			Short: "Measure veil's components (prints a table, or JSON lines with --json)",
			Long: `bench measures one component at a time on this machine and prints a table, or one JSON
object per line with --json. The figures in docs/benchmarks.md come from these commands.`,
		}
		for _, f := range benchSubs {
			c.AddCommand(f())
		}
		return c
	})
}
