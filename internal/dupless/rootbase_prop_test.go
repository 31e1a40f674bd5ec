package dupless

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Random sequences of changes (adds, replacements, removals, removals of absent paths,
// re-adds of a removed path with its old hash, writes of the same hash), growing and
// shrinking the namespace across rootBaseFrom both ways: every root, sealed and opened as a
// reader would (with its base), lists exactly the writer's entries; a version 2 root's
// changes are minimal (none equals its base) and within bounds; and a writer that goes on
// from the root a reader opened (another device) writes the same entries.
func TestRootFormsProperty(t *testing.T) {
	rootForms(t, 1200, 600)
	k, _ := deriveUserKeys(bytes.Repeat([]byte{7}, MasterKeySize))
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]string, 120)
	for i := range pool {
		pool[i] = fmt.Sprintf("%0*d.key", 4+rng.IntN(40), i)
	}
	stored := map[[baseIDSize]byte][]byte{}
	open := func(sealed []byte, seq uint64) *treeRoot {
		t.Helper()
		r, err := k.openRoot(sealed, rootName(seq))
		if err != nil {
			t.Fatal(err)
		}
		if r.base != nil {
			b, ok := stored[r.base.id]
			if !ok {
				t.Fatalf("root %d names base %x, never stored", seq, r.base.id)
			}
			ents, err := k.openBase(b, r.base.id, r.base.sum, r.base.count)
			if err != nil {
				t.Fatal(err)
			}
			r.base = &rootBase{id: r.base.id, sum: r.base.sum, count: r.base.count, entries: ents}
			r.materialize()
		}
		return r
	}
	model := map[string][32]byte{}
	removed := map[string][32]byte{}
	prev := &treeRoot{Entries: map[string][32]byte{}}
	forms := map[string]int{}
	for round := range 600 {
		target := 10 + 90*((round/150)%2) // grow to ~100 paths, shrink to ~10, and again
		changes := map[string]*[32]byte{}
		for range 1 + rng.IntN(6) {
			p := pool[rng.IntN(len(pool))]
			_, present := model[p]
			switch op := rng.IntN(10); {
			case op < 2 && present: // removal
				removed[p] = model[p]
				changes[p] = nil
			case op < 3 && !present: // removal of an absent path
				changes[p] = nil
			case op < 5 && present: // the same hash again
				h := model[p]
				changes[p] = &h
			case op < 7 && !present && removed[p] != ([32]byte{}): // re-added as it was
				h := removed[p]
				changes[p] = &h
			case len(model) < target || present:
				var h [32]byte
				for i := 0; i < len(h); i += 8 {
					binary.LittleEndian.PutUint64(h[i:], rng.Uint64())
				}
				changes[p] = &h
			}
		}
		for p, h := range changes {
			if h == nil {
				delete(model, p)
			} else {
				model[p] = *h
			}
		}
		next := nextRoot(prev, changes)
		sealed := k.sealRoot(next)
		switch {
		case next.base == nil:
			forms["v1"]++
		case next.base.sealed != nil:
			forms["new base"]++
			stored[next.base.id] = next.base.sealed
			next.base.sealed = nil
		default:
			forms["delta"]++
			if _, ok := stored[next.base.id]; !ok {
				t.Fatalf("round %d: a delta on a base never stored", round)
			}
		}
		if !maps.Equal(next.Entries, model) {
			t.Fatalf("round %d: the writer's root lists %d entries, the model %d", round, len(next.Entries), len(model))
		}
		if next.base != nil {
			for p, h := range next.delta {
				was, ok := next.base.entries[p]
				if h == nil && !ok || h != nil && ok && was == *h {
					t.Fatalf("round %d: change of %s equals the base", round, p)
				}
			}
			if ds := deltaSize(next.delta); ds > rootDeltaMax || ds > entriesSize(next.Entries)/4 {
				t.Fatalf("round %d: %d bytes of changes for %d of entries", round, ds, entriesSize(next.Entries))
			}
		} else if entriesSize(next.Entries) > rootBaseFrom {
			t.Fatalf("round %d: a version 1 root of %d bytes of entries", round, entriesSize(next.Entries))
		}
		read := open(sealed, next.Seq)
		if !maps.Equal(read.Entries, model) {
			t.Fatalf("round %d: a reader lists %d entries, the model %d", round, len(read.Entries), len(model))
		}
		if read.sum != next.sum {
			t.Fatalf("round %d: sums differ", round)
		}
		prev = next
		if rng.IntN(3) == 0 {
			prev = read // another device goes on from the root it read
		}
	}
	if forms["v1"] == 0 || forms["new base"] < 3 || forms["delta"] == 0 {
		t.Fatalf("forms written %v: the test must cover each", forms)
	}
}

// Two devices change a version 2 namespace at once (lone puts without the lock, puts of
// several files and removals under it, rebasing on each other's roots across checkpoints)
// while a third runs prune with no grace whenever it gets the lock: afterwards the newest
// root lists exactly the records stored, and every retained root and its base read back.
// (Not the files' contents: with no grace, prune may delete a chunk a running put sent;
// that is what the grace is for.)
func TestRootBasesUnderConcurrentDevices(t *testing.T) {
	rootForms(t, 4<<10, 2<<10)
	be, dev := newGateBE(t)
	if _, err := dev().Put(ctx, []string{bigTree(t, 120)}, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	change := func(c *Client, d, i int) error {
		src := filepath.Join(dir, fmt.Sprintf("dev%d-%d", d, i))
		var err error
		switch i % 4 {
		case 0, 1: // a lone file
			write(t, src, randBytes(500, uint64(d*1000+i)))
			_, err = c.Put(ctx, []string{src}, "tree/lone")
		case 2: // a folder of three
			for j := range 3 {
				write(t, filepath.Join(src, fmt.Sprint(j)), randBytes(300, uint64(d*1000+i*10+j)))
			}
			_, err = c.Put(ctx, []string{src}, "tree/many")
		case 3:
			_, err = c.Remove(ctx, fmt.Sprintf("tree/d%d/file-%04d", d, 10*(i/4)+d), false)
		}
		return err
	}
	var wg, pruner sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	for d := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dev()
			for i := range 20 {
				err := ErrLocked
				for tries := 0; errors.Is(err, ErrLocked) && tries < 200; tries++ {
					if tries > 0 {
						time.Sleep(5 * time.Millisecond)
					}
					err = change(c, d, i)
				}
				if err != nil {
					errs <- fmt.Errorf("device %d, change %d: %w", d, i, err)
				}
			}
		}()
	}
	pruned := 0
	pruner.Add(1)
	go func() {
		defer pruner.Done()
		p := dev()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := p.Prune(ctx, 0, false)
			switch {
			case errors.Is(err, ErrLocked):
			case err != nil:
				errs <- fmt.Errorf("prune: %w", err)
				return
			default:
				pruned += res.BasesRemoved
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	pruner.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	r := dev()
	root, err := r.latestRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := r.scanRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(root.Entries, stored) {
		t.Fatalf("the newest root lists %d records, %d are stored", len(root.Entries), len(stored))
	}
	if _, err := r.loadRoots(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bases stored, %d removed by prune", len(listNames(t, be, basesDir)), pruned)
}

// A namespace that shrinks back below rootBaseFrom (rm -r) writes version 1 roots again,
// and one that grows past it again writes a new base; a new device reads every snapshot
// as its writer listed it, and after forget and prune only the bases of retained
// snapshots are left.
func TestRootFormsAcrossThresholdBothWays(t *testing.T) {
	rootForms(t, 8<<10, 4<<10)
	be := newBackend(t)
	dev := devices(t, be)
	c := dev()
	var want []map[string][32]byte
	step := func(f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		want = append(want, maps.Clone(c.view.root.Entries))
	}
	step(func() error { _, err := c.Put(ctx, []string{bigTree(t, 200)}, "a"); return err })
	if c.view.root.base == nil {
		t.Fatal("200 files: a version 1 root")
	}
	step(func() error { _, err := c.Remove(ctx, "a", true); return err })
	if c.view.root.base != nil {
		t.Fatalf("after rm -r: a version 2 root of %d entries", len(c.view.root.Entries))
	}
	treeB := bigTree(t, 150)
	step(func() error { _, err := c.Put(ctx, []string{treeB}, "b"); return err })
	if c.view.root.base == nil || len(listNames(t, be, basesDir)) != 2 {
		t.Fatalf("grown again: %d bases stored, want 2", len(listNames(t, be, basesDir)))
	}
	d := dev()
	snaps, err := d.Snapshots(ctx)
	if err != nil || len(snaps) != len(want) {
		t.Fatalf("snapshots %v, %v; want %d", snaps, err, len(want))
	}
	for i, s := range snaps {
		r, err := d.fetchRootSeq(ctx, s.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(r.Entries, want[i]) {
			t.Fatalf("snapshot %d: %d entries read, %d written", s.Seq, len(r.Entries), len(want[i]))
		}
	}
	if _, err := c.Forget(ctx, Policy{Last: 2}, false); err != nil { // the first base's root goes
		t.Fatal(err)
	}
	if _, err := c.Prune(ctx, 0, false); err != nil {
		t.Fatal(err)
	}
	if left := listNames(t, be, basesDir); len(left) != 1 || left[0] != baseName(c.view.root.base.id) {
		t.Fatalf("bases left %v, want the newest root's only", left)
	}
	sameFile(t, dev(), filepath.Join(treeB, "d3", "file-0003"), "b/tree/d3/file-0003")
}
