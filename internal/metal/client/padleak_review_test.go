package client

import (
	"context"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
)

// refusing counts every access the servers see and refuses those refuse says no to (as
// the servers do after the access ran: a refused access costs and looks like any other).
type refusing struct {
	*memBlocks
	n      int
	refuse func(write bool, id uint64) bool
}

func (r *refusing) Read(ctx context.Context, c []byte, id uint64) ([]byte, error) {
	r.n++
	if r.refuse(false, id) {
		return nil, access.ErrRefused
	}
	return r.memBlocks.Read(ctx, c, id)
}

func (r *refusing) Write(ctx context.Context, c []byte, id uint64, b []byte) error {
	r.n++
	if r.refuse(true, id) {
		return access.ErrRefused
	}
	return r.memBlocks.Write(ctx, c, id, b)
}

// --pad N promises the servers see exactly N accesses whatever the file. The servers'
// verdict, and whether an id holds a well-formed file, are secrets they must not learn
// (docs/design-metal.md: neither server learns "whether it was allowed"); an early return
// after the first refused or malformed access shows them as one access instead of N.
func TestPaddedAccessCountHidesRefusal(t *testing.T) {
	ctx := context.Background()
	const pad = 4
	m := &memBlocks{bs: 64, data: map[uint64][]byte{}}
	if _, err := writeFile(ctx, m, caps(0, 63), 0, fill(100, 7), FileOptions{}); err != nil { // 4 segments at 0..3
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		refuse func(bool, uint64) bool
		run    func(b blocks) error
		want   string
	}{
		{"read refused", func(bool, uint64) bool { return true },
			func(b blocks) error { _, _, err := readFile(ctx, b, caps(0, 63), 0, FileOptions{Pad: pad}); return err }, "refused"},
		{"read of a later segment refused", func(_ bool, id uint64) bool { return id == 2 },
			func(b blocks) error { _, _, err := readFile(ctx, b, caps(0, 63), 0, FileOptions{Pad: pad}); return err }, "refused"},
		{"read of a non-head id", func(bool, uint64) bool { return false },
			func(b blocks) error { _, _, err := readFile(ctx, b, caps(0, 63), 2, FileOptions{Pad: pad}); return err }, "not the start of a file"},
		{"read of an id never written", func(bool, uint64) bool { return false },
			func(b blocks) error {
				_, _, err := readFile(ctx, b, caps(0, 63), 40, FileOptions{Pad: pad})
				return err
			}, "never written"},
		{"write refused at its second segment", func(w bool, id uint64) bool { return w && id == 10 },
			func(b blocks) error {
				_, err := writeFile(ctx, b, caps(0, 63), 8, fill(80, 1), FileOptions{Pad: pad})
				return err
			}, "refused"},
	} {
		r := &refusing{memBlocks: m, refuse: c.refuse}
		err := c.run(r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
		if r.n != pad {
			t.Errorf("%s with --pad %d: the servers saw %d accesses", c.name, pad, r.n)
		}
	}
}
