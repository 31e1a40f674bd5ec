package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// veil bench metal --primitive end to end: both systems at one tiny point, each row with
// its AND gates and bytes between the servers; --rtt with it, --bandwidth without it or
// negative are refused in one line.
func TestBenchMetalPrimitiveCLI(t *testing.T) {
	cmd := exec.Command(veilBin, "bench", "metal", "--primitive", "--point", "2:32", "--stash", "4", "--ops", "2", "--json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	dec := json.NewDecoder(&out)
	var systems []string
	for dec.More() {
		var r struct {
			Files   uint64  `json:"files"`
			Block   int     `json:"block_bytes"`
			System  string  `json:"system"`
			N       int     `json:"n"`
			ANDs    uint64  `json:"and_gates"`
			MB      float64 `json:"mb_between_servers"`
			Speedup float64 `json:"metal_speedup"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Files != 4 || r.Block != 32 || r.N != 2 || r.ANDs == 0 || r.MB <= 0 {
			t.Fatalf("row %+v", r)
		}
		if (r.System == "primitive") != (r.Speedup > 0) {
			t.Fatalf("speed-up %v on the %s row", r.Speedup, r.System)
		}
		systems = append(systems, r.System)
	}
	if strings.Join(systems, ",") != "metal,primitive" {
		t.Fatalf("rows for %v", systems)
	}
	for _, bad := range [][]string{{"--primitive", "--rtt", "19ms"}, {"--bandwidth", "290"}, {"--primitive", "--bandwidth", "-1"}} {
		cmd = exec.Command(veilBin, append([]string{"bench", "metal"}, bad...)...)
		b, err := cmd.CombinedOutput()
		if err == nil || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 || !strings.Contains(string(b), bad[len(bad)-2]) {
			t.Fatalf("%v: %v, %q", bad, err, b)
		}
	}
}
