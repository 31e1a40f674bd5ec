package fusemount

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// slowBE is a real backend whose answers come late: a STAT of a tree root after
// rootStat, a GET of a record (not a chunk nor a root) after recordGet; each wait ends
// with its request's ctx.
type slowBE struct {
	storage.Backend
	rootStat, recordGet atomic.Int64 // time.Duration
}

func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *slowBE) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	if dir == ".veil/roots" {
		if err := wait(ctx, time.Duration(b.rootStat.Load())); err != nil {
			return storage.Info{}, err
		}
	}
	return b.Backend.Stat(ctx, dir, name)
}

func (b *slowBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if !strings.HasPrefix(dir, ".veil/") {
		if err := wait(ctx, time.Duration(b.recordGet.Load())); err != nil {
			return nil, err
		}
	}
	return b.Backend.Get(ctx, dir, name)
}

// A lookup under current/ that finds a check for a newer root due, on a service slow to
// answer the check, waits for it (up to checkWait) and then has its whole
// Config.ReadTimeout for its own read. Found by review (left open since session 15): the
// wait counted against the lookup's ReadTimeout, so with --read-timeout 1s the lookup
// failed with EIO although its own read took 300 ms.
func TestMountDueCheckLeavesTheLookupItsReadTimeout(t *testing.T) {
	requireFUSE(t)
	l, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	be := &slowBE{Backend: l}
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "f"), []byte("f"), 0o644)
	c := newClient(t, be)
	putTree(t, c, src)
	m := runMount(t, c, func(c *Config) { c.ReadTimeout = time.Second; c.Refresh = time.Second })
	be.rootStat.Store(int64(time.Minute))             // the check outlasts checkWait (and ends at its own ReadTimeout)
	be.recordGet.Store(int64(300 * time.Millisecond)) // each lookup reads its entry's record
	time.Sleep(1100 * time.Millisecond)               // a check is due; nothing looked up yet
	start := time.Now()
	fi, err := os.Stat(filepath.Join(m.dir, "current", "src", "sub", "f"))
	if err != nil || fi.Size() != 1 {
		t.Fatalf("stat with a check due on a slow service: %v %v after %v, want the file", fi, err, time.Since(start).Round(time.Millisecond))
	}
}
