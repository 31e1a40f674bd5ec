package dupless

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// agedMarkBE is gateBE whose prune mark looks age older than it is (as the storage's
// clock dates it), as a mark a crashed command left that long ago would.
type agedMarkBE struct {
	*gateBE
	age   time.Duration
	locks *atomic.Int64 // locks written
}

func (b agedMarkBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if dir == locksDir {
		b.locks.Add(1)
	}
	return b.gateBE.Put(ctx, dir, name, r, size)
}

func (b agedMarkBE) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	i, err := b.gateBE.Stat(ctx, dir, name)
	if err == nil && dir == veilDir && name == pruneMark {
		i.ModTime = i.ModTime.Add(-b.age)
	}
	return i, err
}

// A prune, rm, mv or sync that crashed leaves .veil/pruning, and every lock-free put went
// under the lock until the next such command ended or --break-lock. A put under the lock,
// after its lock-free batch was refused, now deletes a mark older than a lock-free put may
// run plus a lock's staleness (the command that wrote it is gone, and so is every lock-free
// put that read its root before), and the next small put goes without the lock again. A
// younger mark stays.
func TestAbandonedPruneMarkCleared(t *testing.T) {
	for _, tc := range []struct {
		age  time.Duration
		kept bool
	}{{time.Hour, false}, {locklessMaxAge, true}} {
		gate, _ := newGateBE(t)
		be := agedMarkBE{gate, tc.age, new(atomic.Int64)}
		dev := devices(t, be)
		dir := t.TempDir()
		first := filepath.Join(dir, "first") // the namespace and its key check
		write(t, first, randBytes(100, 61))
		if _, err := dev().Put(ctx, []string{first}, ""); err != nil {
			t.Fatal(err)
		}
		// What a crashed 'veil rm' leaves: its mark, and no lock (broken, or stale).
		if err := be.Put(ctx, veilDir, pruneMark, bytesReader(nil), 0); err != nil {
			t.Fatal(err)
		}
		one := filepath.Join(dir, "one")
		write(t, one, randBytes(4096, 62))
		if _, err := dev().Put(ctx, []string{one}, ""); err != nil { // refused lock-free, put under the lock
			t.Fatal(err)
		}
		_, err := be.Stat(ctx, veilDir, pruneMark)
		if kept := err == nil; kept != tc.kept || err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a mark %v old after a put refused by it: kept %v (%v), want kept %v", tc.age, kept, err, tc.kept)
		}
		two := filepath.Join(dir, "two")
		write(t, two, randBytes(4096, 63))
		locks := be.locks.Load()
		if _, err := dev().Put(ctx, []string{two}, ""); err != nil {
			t.Fatal(err)
		}
		if underLock := be.locks.Load() > locks; underLock != tc.kept {
			t.Fatalf("the next small put after a mark %v old: under the lock %v, want %v", tc.age, underLock, tc.kept)
		}
		sameFile(t, dev(), one, "one")
		sameFile(t, dev(), two, "two")
	}
}
