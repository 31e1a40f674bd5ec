package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// veil bench metal --share end to end at a small list: the three rows of Table 3's
// sharing part, the receive's download sized 96 bytes per entry; --list below --ops refused.
func TestBenchMetalShareCLI(t *testing.T) {
	cmd := exec.Command(veilBin, "bench", "metal", "--share", "--ops", "1", "--list", "40", "--json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	dec := json.NewDecoder(&out)
	var ops []string
	for dec.More() {
		var r struct {
			Op      string  `json:"op"`
			N       int     `json:"n"`
			MeanMs  float64 `json:"mean_ms"`
			Entries int     `json:"entries"`
			Bytes   int     `json:"download_bytes"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.N != 1 || r.MeanMs <= 0 {
			t.Fatalf("row %+v", r)
		}
		if r.Op == "receive_capability" && (r.Entries != 40 || r.Bytes != 21+40*96) {
			t.Fatalf("receive row %+v", r)
		}
		ops = append(ops, r.Op)
	}
	if strings.Join(ops, ",") != "new_anonym,send_capability,receive_capability" {
		t.Fatalf("rows %v", ops)
	}
	b, err := exec.Command(veilBin, "bench", "metal", "--share", "--ops", "3", "--list", "2").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "--list 2 is smaller than --ops 3") {
		t.Fatalf("--list < --ops: %v, %q", err, b)
	}
}
