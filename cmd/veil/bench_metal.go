package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	metalbench "github.com/veil-project/veil/internal/bench/metal"
)

func init() { registerBench(newBenchMetalCommand) }

func newBenchMetalCommand() *cobra.Command {
	var asJSON, prim, shr bool
	var bandwidth float64
	var listN int
	var points []string
	var cfg metalbench.Config
	c := &cobra.Command{
		Use:   "metal",
		Short: "Metal's Table 3 breakdown and Fig. 10's axes (files, file size)",
		Long: `metal starts two real Metal servers on loopback (TLS; mutual TLS and the 2PC stream between
them; temporary directories) and the real client, and measures CreateAccount, WriteFile and
ReadFile latency at each size, with where Server 1's time went:

  front      Metal-AC capability check + the base position map's scan (one 2PC Run)
  indexoram  IndexORAM inside 2PC: each tree of records, then the data-level tree (read, two
             evictions each)
  split      one 2PC Run: the DOT index, and the insert and both evictions composed into
             one permutation and split between the servers (Sections 5.5-5.6)
  fetch      SS-DOT over the rerandomized stash+path and the two-party decryption
  permute    the one distributed permutation over stash + both eviction paths + fetched +
             client block, rerandomized and applied by Server 1 then Server 2
  commit     the bbolt transaction

cpu ms is the CPU time (user+system) of this process per call: both servers and the
client. On a machine shared with other work it is the steadier figure; with two idle
cores an access cannot take less than half of it.

--point LOG2FILES:BLOCK (repeatable), LOG2FILES <= 20.

--primitive compares Metal with Primitive Metal (paper Section 5.2: the whole ORAM, file
data included, inside 2PC) at the same points, both servers in this process over a
loopback TCP link (no HTTP or TLS), Metal-AC included: mean and min ms per access (writes
and reads alternate), CPU ms per access (both servers: this process), garbled AND gates
and MB between the servers per access, and primitive's time over Metal's. Keep the points
small (LOG2FILES <= 12, blocks of a few KiB: a 4 KiB access is ~12 M AND gates inside 2PC).
Default points 4:1024, 6:1024, 4:4096. --bandwidth MB/s caps each direction of that link
(the paper's servers were ~290 MB/s apart; loopback charges nothing for bytes).

Examples:
  veil bench metal
  veil bench metal --point 8:1024 --point 8:4096 --ops 5 --json
  veil bench metal --point 8:1024 --rtt 19ms      # the paper's inter-server latency
  veil bench metal --primitive --point 6:1024 --ops 2
  veil bench metal --primitive --point 6:4096 --bandwidth 290   # the paper's link
  veil bench metal --share --rtt 19ms              # NewAnonym, SendCapability, ReceiveCapability of 10^4

--share measures the paper's sharing rows (Section 6): NewAnonym on the client alone,
SendCapability through both servers (2PC), and ReceiveCapability of --list entries (the
download from Server 1 and the client's trial decryptions, also shown alone).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, p := range points {
				a, b, ok := strings.Cut(p, ":")
				d, err1 := strconv.Atoi(a)
				bs, err2 := strconv.Atoi(b)
				if !ok || err1 != nil || err2 != nil {
					return fmt.Errorf("--point %q: want LOG2FILES:BLOCK, e.g. 10:4096", p)
				}
				cfg.Points = append(cfg.Points, metalbench.Point{FilesLog2: d, BlockSize: bs})
			}
			if shr {
				return runBenchMetalShare(cmd, metalbench.ShareConfig{Ops: cfg.Ops, List: listN, RTT: cfg.RTT}, asJSON)
			}
			if bandwidth != 0 && (!prim || bandwidth < 0) {
				return fmt.Errorf("--bandwidth takes a positive MB/s and needs --primitive")
			}
			if prim {
				if cfg.RTT != 0 {
					return fmt.Errorf("--rtt is not supported with --primitive")
				}
				return runBenchMetalPrimitive(cmd, cfg, bandwidth, asJSON)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			if !asJSON {
				fmt.Fprintln(tw, "rtt ms\tfiles\tblock\top\tn\tmean ms\tmin ms\tcpu ms\tfront\tindexoram\tsplit\tfetch\tpermute\tcommit\tpaper\t")
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			err := metalbench.Run(cmd.Context(), cfg, func(r metalbench.Row) {
				if asJSON {
					enc.Encode(r)
					return
				}
				fmt.Fprintf(tw, "%.0f\t%d\t%d\t%s\t%d\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.RTTms, r.Files, r.Block, r.Op, r.N, r.MeanMs, r.MinMs, blankZero("%.0f", r.CPUMs),
					blankZero("%.0f", r.Front), blankZero("%.0f", r.Index), blankZero("%.0f", r.Split), blankZero("%.0f", r.Fetch),
					blankZero("%.0f", r.Permute), blankZero("%.0f", r.Commit), r.Paper)
			})
			tw.Flush()
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON object per row")
	c.Flags().BoolVar(&shr, "share", false, "Metal-SHARE's Table 3 rows: NewAnonym, SendCapability, ReceiveCapability (bench_metal_share.go)")
	c.Flags().IntVar(&listN, "list", 10000, "with --share: broadcast-list entries one receive downloads")
	c.Flags().BoolVar(&prim, "primitive", false, "compare with Primitive Metal (the whole ORAM inside 2PC, paper Section 5.2)")
	c.Flags().Float64Var(&bandwidth, "bandwidth", 0, "with --primitive: cap each direction of the servers' link at this many MB/s (the paper's: ~290)")
	c.Flags().StringArrayVar(&points, "point", nil, "LOG2FILES:BLOCK to measure (repeatable; default 6:1024, 10:1024, 10:4096)")
	c.Flags().IntVar(&cfg.Ops, "ops", 3, "reads and writes (and accounts) per point")
	c.Flags().IntVar(&cfg.Stash, "stash", 33, "ORAM stash bound")
	c.Flags().DurationVar(&cfg.RTT, "rtt", 0, "added inter-server round-trip time on the 2PC link (the paper's setting: 19ms)")
	return c
}

func runBenchMetalPrimitive(cmd *cobra.Command, cfg metalbench.Config, bandwidth float64, asJSON bool) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "files\tblock\tsystem\tn\tmean ms\tmin ms\tcpu ms\tM AND/access\tMB between servers\tmetal speed-up\tpaper (Table 5)\t")
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	cc := metalbench.CompareConfig{Points: cfg.Points, Ops: cfg.Ops, Stash: cfg.Stash, Bandwidth: bandwidth * 1e6}
	err := metalbench.RunCompare(cmd.Context(), cc, func(r metalbench.CompareRow) {
		if asJSON {
			enc.Encode(r)
			return
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t%.1f\t%s\t%s\t\n", r.Files, r.Block, r.System, r.N, r.MeanMs, r.MinMs, r.CPUMs,
			float64(r.ANDs)/1e6, r.MB, blankZero("%.2f", r.Speedup), r.Paper)
	})
	tw.Flush()
	return err
}
