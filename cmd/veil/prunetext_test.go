package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/dupless"
)

// prune's text names the tree bases it removed (or would remove), as its JSON does
// (bases_removed); found by review: only the JSON said it.
func TestPrintPruneNamesBases(t *testing.T) {
	for dry, want := range map[bool]string{false: "removed 2 tree bases no retained snapshot uses", true: "would remove 1 tree base no"} {
		res := &dupless.PruneResult{BasesRemoved: 1}
		if !dry {
			res.BasesRemoved = 2
		}
		var out bytes.Buffer
		printPrune(&out, dry, res)
		if !strings.Contains(out.String(), want) {
			t.Errorf("prune's text %q, want it to say %q", out.String(), want)
		}
	}
	var out bytes.Buffer
	printPrune(&out, false, &dupless.PruneResult{})
	if strings.Contains(out.String(), "tree base") {
		t.Errorf("prune's text %q names tree bases when it removed none", out.String())
	}
}
