package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/bench/mle"
	"github.com/veil-project/veil/internal/mle"
)

func init() { registerBench(newBenchMLECommand) }

func newBenchMLECommand() *cobra.Command {
	var asJSON bool
	var ghz float64
	var suiteName string
	c := &cobra.Command{
		Use:   "mle",
		Short: "Throughput of the MLE schemes (KeyGen+Enc+TagGen) and of their primitives",
		Long: `mle measures KeyGen + Enc + TagGen of CE, HCE1, HCE2 and RCE on 4 KiB and 1 MiB messages
(the measure of the MLE paper's table), then SHA-256, BLAKE3 and AES-256-CTR alone on the
same sizes, and prints MB/s and cycles per byte at the CPU's nominal clock. The last
column compares each scheme with one hash pass plus one AES-CTR pass over the same bytes,
measured in the same run: 1.00 is the primitive limit.

Examples:
  veil bench mle
  veil bench mle --suite sha256 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			suite := mle.BLAKE3
			switch suiteName {
			case "sha256":
				suite = mle.SHA256
			case "blake3":
			default:
				return fmt.Errorf("unknown --suite %q (want blake3 or sha256)", suiteName)
			}
			if ghz == 0 {
				ghz = mlebench.NominalGHz()
			}
			rows := runMLEBench(suite, ghz, func(done, total int) {
				if !asJSON {
					fmt.Fprintf(progressOut(cmd), "\rmeasuring %d/%d", done, total)
				}
			})
			if !asJSON {
				fmt.Fprint(progressOut(cmd), "\r\033[K")
			}
			return printMLEBench(cmd.OutOrStdout(), rows, suite, ghz, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	c.Flags().Float64Var(&ghz, "ghz", 0, "nominal CPU clock for cycles/byte (default: read /proc/cpuinfo)")
	c.Flags().StringVar(&suiteName, "suite", "blake3", "hash of the MLE suite: blake3 or sha256")
	return c
}

func runMLEBench(suite mle.Suite, ghz float64, progress func(done, total int)) []mlebench.Result {
	cases := mlebench.Cases(suite)
	var rows []mlebench.Result
	for i, c := range cases {
		progress(i, len(cases))
		r := mlebench.Measure(c, ghz)
		if c.Group == "MLE" {
			r.Suite = suite.String()
		}
		rows = append(rows, r)
	}
	return rows
}

func printMLEBench(out io.Writer, rows []mlebench.Result, suite mle.Suite, ghz float64, asJSON bool) error {
	hashName := map[mle.Suite]string{mle.SHA256: "SHA256", mle.BLAKE3: "BLAKE3"}[suite]
	nsOf := map[string]float64{}
	for _, r := range rows {
		nsOf[r.Name+"/"+mlebench.SizeName(r.Size)] = r.NsPerOp
	}
	if asJSON {
		enc := json.NewEncoder(out)
		for _, r := range rows {
			if err := enc.Encode(struct {
				mlebench.Result
				VsLimit float64 `json:"vs_hash_plus_ctr,omitempty"`
				GHz     float64 `json:"ghz"`
			}{r, limitRatio(r, hashName, nsOf), ghz}); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(out, "suite %v, cycles/byte at %.2f GHz nominal\n", suite, ghz)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "what\tsize\tMB/s\tcycles/byte\tvs hash+CTR limit\t")
	for _, r := range rows {
		ratio := ""
		if v := limitRatio(r, hashName, nsOf); v > 0 {
			ratio = fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%.0f\t%.2f\t%s\t\n", r.Group, r.Name, mlebench.SizeName(r.Size), r.MBPerS, r.CyclesPerByte, ratio)
	}
	return tw.Flush()
}

// limitRatio is (time of one hash pass + one CTR pass) / (time of the scheme), for MLE rows.
func limitRatio(r mlebench.Result, hashName string, nsOf map[string]float64) float64 {
	if r.Group != "MLE" {
		return 0
	}
	size := mlebench.SizeName(r.Size)
	return (nsOf[hashName+"/"+size] + nsOf["AESCTR/"+size]) / r.NsPerOp
}
