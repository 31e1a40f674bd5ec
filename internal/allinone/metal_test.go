package allinone

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
)

// Metal's addresses and parameters are fixed at the first --metal run: a later run giving
// the same ones (or none) goes ahead, a different one is refused naming the flag, not
// silently ignored.
func TestInitMetalRefusesDifferentSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	p := access.Params{D: 3, Stash: 6, BlockSize: 64, FilesPerAccount: 2, Pack: 1, Base: 2}
	if err := InitMetal(dir, "127.0.0.1:17601", "127.0.0.1:17602", p, MetalExplicit{}); err != nil {
		t.Fatal(err)
	}
	for _, same := range []MetalExplicit{{}, {Addr1: "127.0.0.1:17601", Addr2: "127.0.0.1:17602", D: 3, BlockSize: 64}} {
		if err := InitMetal(dir, "127.0.0.1:7601", "127.0.0.1:7602", access.DefaultParams, same); err != nil {
			t.Fatalf("a later run with %+v: %v", same, err)
		}
	}
	for flag, other := range map[string]MetalExplicit{
		"--metal-listen1 127.0.0.1:17601": {Addr1: "127.0.0.1:7601"},
		"--metal-listen2 127.0.0.1:17602": {Addr2: "127.0.0.1:7602"},
		"--metal-files-log2 3":            {D: 10},
		"--metal-block-size 64":           {BlockSize: 4096},
	} {
		err := InitMetal(dir, "127.0.0.1:7601", "127.0.0.1:7602", access.DefaultParams, other)
		if err == nil || !strings.Contains(err.Error(), "set up with "+flag) {
			t.Fatalf("a later run with %+v: %v", other, err)
		}
	}
}
