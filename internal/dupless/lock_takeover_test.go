package dupless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// A put killed while holding its lock no longer holds prune off for its lease: a lock of
// this host whose process is gone is taken over at once (before: 15 minutes, no
// override). A live holder, or another host's, is respected; BreakLocks overrides all.
func TestLockTakeover(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	if err := c.checkOwner(ctx); err != nil {
		t.Fatal(err)
	}
	plant := func(host string, pid int) string {
		name := fmt.Sprintf("shared-%d-0011223344556677-%s-%d", time.Now().Unix(), host, pid)
		if err := be.Put(ctx, locksDir, name, bytes.NewReader(nil), 0); err != nil {
			t.Fatal(err)
		}
		return name
	}
	deadLock := plant(c.hostTag(), dead.Process.Pid)
	if _, err := c.Prune(ctx, 0, false); err != nil {
		t.Fatalf("prune with a dead holder's lock: %v", err)
	}
	if _, err := be.Stat(ctx, locksDir, deadLock); err == nil {
		t.Fatal("the dead holder's lock was left behind")
	}
	liveLock := plant(c.hostTag(), live.Process.Pid)
	if _, err := c.Prune(ctx, 0, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("prune with a live holder's lock: %v", err)
	}
	be.Delete(ctx, locksDir, liveLock)
	plant("0123456789abcdef", dead.Process.Pid) // another host: its pids say nothing here
	if _, err := c.Prune(ctx, 0, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("prune with another host's lock: %v", err)
	}
	broken, err := c.BreakLocks(ctx)
	if err != nil || len(broken) != 1 {
		t.Fatalf("break locks: %v %v", broken, err)
	}
	if _, err := c.Prune(ctx, 0, false); err != nil {
		t.Fatalf("prune after breaking the locks: %v", err)
	}
	// The lock this client writes names its host and process.
	unlock, err := c.lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	infos, _ := be.List(ctx, locksDir)
	want := fmt.Sprintf("-%s-%d", c.hostTag(), os.Getpid())
	if len(infos) != 1 || !bytes.HasSuffix([]byte(infos[0].Name), []byte(want)) {
		t.Fatalf("lock names %v, want one ending %s", infos, want)
	}
}

// skewedBE is storage whose clock runs an hour behind this machine's: every time it
// lists is an hour before the local clock's now.
type skewedBE struct{ storage.Backend }

func (b skewedBE) List(ctx context.Context, dir string) ([]storage.Info, error) {
	infos, err := b.Backend.List(ctx, dir)
	for i := range infos {
		if !infos[i].ModTime.IsZero() {
			infos[i].ModTime = infos[i].ModTime.Add(-time.Hour)
		}
	}
	return infos, err
}

// A live lock is judged by the storage's clock, not this machine's: with the storage an
// hour behind, another command's fresh shared lock still holds prune off. Found by review:
// against the local clock it looked an hour old, abandoned, and prune went ahead.
func TestLockJudgedByStorageClock(t *testing.T) {
	be := skewedBE{newBackend(t)}
	dev := devices(t, be)
	holder := dev()
	if err := holder.checkOwner(ctx); err != nil {
		t.Fatal(err)
	}
	unlock, err := holder.lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := dev().Prune(ctx, DefaultGrace, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("prune while a put holds its lock, storage clock an hour behind: %v, want %v", err, ErrLocked)
	}
}

// Prune's grace is judged by the storage's clock too: with the storage an hour behind this
// machine, an unreferenced chunk written a moment ago is too young to delete (a put may be
// about to reference it), not an hour old.
func TestPruneGraceByStorageClock(t *testing.T) {
	be := skewedBE{newBackend(t)}
	dev := devices(t, be)
	src := filepath.Join(t.TempDir(), "f")
	write(t, src, []byte("a file, so that the namespace exists"))
	if _, err := dev().Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	var tag mle.Tag
	copy(tag[:], randBytes(len(tag), 7))
	dir, name := chunkLocation(tag)
	if err := be.Put(ctx, dir, name, bytes.NewReader(randBytes(100, 8)), 100); err != nil {
		t.Fatal(err)
	}
	res, err := dev().Prune(ctx, DefaultGrace, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.ChunksTooYoung != 1 {
		t.Fatalf("prune: %+v, want the fresh chunk kept as too young", res)
	}
	if _, err := be.Stat(ctx, dir, name); err != nil {
		t.Fatalf("the fresh chunk: %v", err)
	}
}

// A lock whose pid is gone is taken over only if it is this host's by more than its name:
// another machine of the same host name (another boot, or another PID namespace) may hold
// it with a pid that means nothing here. Found by review: with the host name alone, rm -r
// on one machine deleted a live put's lock of another and then the put's records.
func TestLockOfSameNamedHostKept(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	if _, ok := hostIdentity(); !ok {
		t.Skip("no /proc: no lock is taken over by pid here")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	lockOf := func() string {
		return fmt.Sprintf("shared-%d-0011223344556677-%s-%d", time.Now().Unix(), c.hostTag(), dead.Process.Pid)
	}
	mine := lockOf()
	real := hostIdentity
	hostIdentity = func() (string, bool) { return "another boot, same host name", true }
	other := lockOf()
	hostIdentity = real
	if !c.holderGone(mine) {
		t.Fatal("a lock of this host whose process is gone is not taken over")
	}
	if c.holderGone(other) {
		t.Fatal("a lock of another machine of the same host name is taken over by its pid")
	}
}
