package dupless

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// rootLogBE is condBE that logs each write touching a chunk, a record or a tree root.
type rootLogBE struct {
	*condBE
	writeLog
}

func writeKind(dir, name string) string {
	if dir == rootsDir {
		return "root"
	}
	return kindOf(dir, name)
}

func (b *rootLogBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	return b.batch(writeKind, objs, b.condBE.PutBatch(ctx, objs))
}

func (b *rootLogBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	return b.put(writeKind, d, n, b.condBE.Put(ctx, d, n, r, s))
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
	dev := devices(t, be)
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
