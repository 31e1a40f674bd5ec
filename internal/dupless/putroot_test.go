package dupless

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// rootLogBE is condBE that logs each write touching a chunk, a record or a tree root.
type rootLogBE struct {
	*condBE
	mu  sync.Mutex
	log []string
}

func writeKind(dir, name string) string {
	if dir == rootsDir {
		return "root"
	}
	return kindOf(dir, name)
}

func (b *rootLogBE) note(s string) {
	b.mu.Lock()
	b.log = append(b.log, s)
	b.mu.Unlock()
}

func (b *rootLogBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	var kinds []string
	for _, o := range objs {
		if k := writeKind(o.Dir, o.Name); k != "" {
			kinds = append(kinds, k)
		}
	}
	err := b.condBE.PutBatch(ctx, objs)
	if err == nil && len(kinds) > 0 {
		b.note("batch[" + strings.Join(kinds, ",") + "]")
	}
	return err
}

func (b *rootLogBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	err := b.condBE.Put(ctx, d, n, r, s)
	if k := writeKind(d, n); k != "" && err == nil {
		b.note(k)
	}
	return err
}

func (b *rootLogBE) Move(ctx context.Context, sd, sn, dd, dn string) error {
	err := b.condBE.Move(ctx, sd, sn, dd, dn)
	if err == nil {
		b.note("move " + writeKind(dd, dn))
	}
	return err
}

// On a service with conditional batches, a lone small file's chunk, record and the
// command's next root go in ONE batch: nothing else writes a root, the root lists the
// record, and another device reads the file (its record checked against that root).
func TestLoneSmallFileRootInBatch(t *testing.T) {
	be := &rootLogBE{condBE: &condBE{Backend: newBackend(t)}}
	master := NewMasterKey()
	dev := func() *Client {
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	c := dev()
	dir := t.TempDir()
	for i, name := range []string{"one", "two"} {
		src := filepath.Join(dir, name)
		write(t, src, randBytes(4096, uint64(20+i)))
		be.log = nil
		if _, err := c.Put(ctx, []string{src}, ""); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(be.log, " "); got != "batch[chunk,record,root]" {
			t.Fatalf("put %d stored as %q, want one batch of the chunk, the record and the root", i+1, got)
		}
		other := dev()
		sameFile(t, other, src, name)
		latest, err := other.latestRoot(ctx)
		if err != nil || latest == nil || latest.Seq != uint64(i+1) || len(latest.Entries) != i+1 {
			t.Fatalf("after put %d: newest root %+v, %v; want number %d listing %d records", i+1, latest, err, i+1, i+1)
		}
	}
}
