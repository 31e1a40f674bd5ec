package osbench

import (
	"testing"
)

// TestExperimentsSmoke runs every engine experiment at a tiny scale and checks the
// shape of the results (fractions reached in order, latency >= 1 epoch, overhead > 1).
func TestExperimentsSmoke(t *testing.T) {
	c := Config{Files: 48, FileSize: 16 << 10, Ks: []int{3, 12}, Fill: 0.5, Dir: t.TempDir()}
	var rows []Row
	emit := func(r Row) { rows = append(rows, r) }
	if err := Run(c, []string{"throughput", "variable", "latency", "buffer"}, 20, 0, emit); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	last := map[int]int{}
	for _, r := range rows {
		seen[r["experiment"].(string)]++
		switch r["experiment"] {
		case "throughput":
			k, ep := r["k"].(int), r["epochs"].(int)
			if ep < last[k] || r["bandwidth_overhead"].(float64) <= 1 {
				t.Errorf("bad throughput row %v", r)
			}
			last[k] = ep
		case "latency":
			if r["mean_epochs"].(float64) < 1 {
				t.Errorf("bad latency row %v", r)
			}
		}
	}
	for _, e := range []string{"throughput", "writer_cpu", "variable", "latency", "buffer"} {
		if seen[e] == 0 {
			t.Errorf("no %s rows", e)
		}
	}
}
