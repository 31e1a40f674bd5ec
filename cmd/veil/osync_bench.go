package main

import "github.com/spf13/cobra"

func newOsyncBench() *cobra.Command {
	return &cobra.Command{Use: "osync", Short: "ObliviSync experiments (paper Figs. 4-7)"}
}
