package access

import (
	"testing"

	"github.com/veil-project/veil/internal/metal/twopc"
)

// maxLinkMessage is the largest SendMessage an access makes between the servers for p: the
// SS-DOT message (dataoram.DOT.Send: 8 bytes, then per offered block a 32-byte sealed zero
// block and the sealed block) and the distributed permutation's arrays (permute: the
// region's blocks one way, the kept ones back; the region is largest when the two eviction
// paths share only the root).
func maxLinkMessage(p Params) int {
	dot := 8 + (p.Slots()+1)*(32+p.CTSize()+16)
	perm := region{p: p, shared: 1}.size() * p.CTSize()
	return max(dot, perm)
}

// Every deployment Params.Check accepts must be able to run an access: a block size whose
// DOT or permutation message exceeds twopc.MaxMessage makes every access fail (SendMessage
// refuses it) after the deployment was initialized and accepted clients.
func TestCheckedParamsFitTheLink(t *testing.T) {
	for _, p := range []Params{
		DefaultParams,
		{D: 20, Stash: 33, BlockSize: 64 << 10, FilesPerAccount: 16, Pack: 3, Base: 10},
		{D: 10, Stash: 33, BlockSize: 1 << 20, FilesPerAccount: 16, Pack: 3, Base: 10},
		{D: 20, Stash: 33, BlockSize: 128 << 10, FilesPerAccount: 16, Pack: 3, Base: 10},
		{D: 2, Stash: 2, BlockSize: 1 << 20, FilesPerAccount: 1, Pack: 1, Base: 2},
	} {
		n := maxLinkMessage(p)
		if err := p.Check(); err == nil && n > twopc.MaxMessage {
			t.Errorf("%+v passes Check, but an access sends a message of %d bytes (limit %d): every access would fail", p, n, twopc.MaxMessage)
		}
	}
	if err := DefaultParams.Check(); err != nil {
		t.Fatal(err)
	}
	p64 := Params{D: 20, Stash: 33, BlockSize: 64 << 10, FilesPerAccount: 16, Pack: 3, Base: 10}
	if err := p64.Check(); err != nil {
		t.Fatalf("64 KiB blocks at 2^20 (docs/benchmarks.md) refused: %v", err)
	}
}
