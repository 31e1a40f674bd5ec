package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// veil bench dupless end to end at one size (--min-size = --max-size): fig6-7 rows for that
// size only, with wall and CPU times of veil and of the plain operation; an empty size
// range is refused in one line.
func TestBenchDuplessOneSizeCLI(t *testing.T) {
	for _, rtt := range []string{"0", "4ms"} { // loopback, then through the simulated link
		benchDuplessOneSize(t, rtt)
	}
	b, err := exec.Command(veilBin, "bench", "dupless", "--min-size", "1MiB", "--max-size", "4KiB").CombinedOutput()
	if err == nil || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 || !strings.Contains(string(b), "--min-size") {
		t.Fatalf("empty range: %v, %q", err, b)
	}
}

func benchDuplessOneSize(t *testing.T, rtt string) {
	cmd := exec.Command(veilBin, "bench", "dupless", "--min-size", "4KiB", "--max-size", "4KiB",
		"--reps", "1", "--min-time", "1ms", "--json", "--rtt", rtt)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	dec := json.NewDecoder(&out)
	var whats []string
	for dec.More() {
		var r struct {
			Experiment string  `json:"experiment"`
			What       string  `json:"what"`
			Size       int64   `json:"size"`
			Ms         float64 `json:"ms"`
			PlainMs    float64 `json:"plain_ms"`
			CPUMs      float64 `json:"cpu_ms"`
			PlainCPUMs float64 `json:"plain_cpu_ms"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Experiment != "fig6-7" {
			continue
		}
		if r.Size != 4096 || r.Ms <= 0 || r.PlainMs <= 0 || r.CPUMs <= 0 || r.PlainCPUMs <= 0 {
			t.Fatalf("row %+v", r)
		}
		if rtt == "4ms" && r.PlainMs < 4 { // a plain put is at least one round trip of the link
			t.Fatalf("--rtt 4ms: plain %s in %.2f ms", r.What, r.PlainMs)
		}
		whats = append(whats, r.What)
	}
	if strings.Join(whats, ",") != "put,get" {
		t.Fatalf("fig6-7 rows %v, want put,get at 4 KiB only", whats)
	}
}
