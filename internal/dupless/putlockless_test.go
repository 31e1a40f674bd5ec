package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// gateBE is absentBE with hooks before each batch and each delete, to stop a command at
// the dangerous points of a lock-free put racing 'veil prune'.
type gateBE struct {
	absentBE
	onBatch  func(objs []storage.Object)
	onDelete func(dir, name string)
	absents  atomic.Int64 // batches with an absent condition (lock-free commits tried)
	// refuseAbsent makes it a service older than batch version 3: a batch with an absent
	// condition is refused whole.
	refuseAbsent bool
	// refuseLarge makes a largeGateBE a service older than large batch objects: a batch
	// with an object over 64 KiB is refused whole; larges counts such batches.
	refuseLarge bool
	larges      atomic.Int64
}

// largeGateBE is gateBE that takes one large object per batch (storage.LargeBatcher), as
// the storage service does from session 10.
type largeGateBE struct{ *gateBE }

func (b largeGateBE) BatchLarge() {}

func (b *gateBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	for _, o := range objs {
		if len(o.Data) > storage.BatchMaxObjectSize {
			b.larges.Add(1)
			if b.refuseLarge {
				return fmt.Errorf("put batch of %d: batch object 3: %d bytes, at most 65536: %w", len(objs), len(o.Data), storage.ErrTooLarge)
			}
		}
	}
	for _, o := range objs {
		if o.Absent {
			b.absents.Add(1)
			if b.refuseAbsent {
				return errors.New("put batch: bad_request: version 3 (test: a service older than it)")
			}
			break
		}
	}
	if b.onBatch != nil {
		b.onBatch(objs)
	}
	return b.absentBE.PutBatch(ctx, objs)
}

func (b *gateBE) Delete(ctx context.Context, dir, name string) error {
	if b.onDelete != nil {
		b.onDelete(dir, name)
	}
	return b.absentBE.Delete(ctx, dir, name)
}

func newGateBE(t *testing.T) (*gateBE, func() *Client) {
	be := &gateBE{absentBE: absentBE{&condBE{Backend: newBackend(t)}}}
	return be, devices(t, be)
}

func isLockless(objs []storage.Object) bool {
	for _, o := range objs {
		if o.Absent {
			return true
		}
	}
	return false
}

// A lone small put goes without the lock: one batch holding its chunk, its record, its
// root and the prune mark's absence; no lock object is written.
func TestLocklessPutOneBatch(t *testing.T) {
	be, dev := newGateBE(t)
	first := filepath.Join(t.TempDir(), "first") // a new namespace: its key check is written under the lock
	write(t, first, randBytes(100, 29))
	if _, err := dev().Put(ctx, []string{first}, ""); err != nil {
		t.Fatal(err)
	}
	c := dev()
	src := filepath.Join(t.TempDir(), "one")
	write(t, src, randBytes(4096, 30))
	var kinds []string
	be.onBatch = func(objs []storage.Object) {
		var k []string
		for _, o := range objs {
			switch {
			case o.Absent && o.Dir == veilDir && o.Name == "moves":
				k = append(k, "absent moves")
			case o.Absent && o.Name == pruneMark:
				k = append(k, "absent "+o.Name)
			case o.Absent:
				k = append(k, "absent name")
			case writeKind(o.Dir, o.Name) == "record" && o.Create:
				k = append(k, "record (create)")
			case writeKind(o.Dir, o.Name) == "root" && zstdFrames(t, c.keys, o.Data, o.Name) > 1:
				k = append(k, "root (drafted)") // compressed while the key request was out
			case writeKind(o.Dir, o.Name) != "":
				k = append(k, writeKind(o.Dir, o.Name))
			}
		}
		kinds = append(kinds, strings.Join(k, ","))
	}
	var progress atomic.Int64
	c.opts.Events.Bytes = func(n int64) { progress.Add(n) }
	if _, err := c.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	if progress.Load() != 4096 {
		t.Fatalf("progress %d bytes, want the file's 4096", progress.Load())
	}
	// The record is created (root n lists none), and the name is not a directory (absent):
	// what the put assumed from root n instead of looking it up (loneFromRoot).
	if got := strings.Join(kinds, " | "); got != "chunk,absent "+pruneMark+",absent moves,record (create),root (drafted),absent name" {
		t.Fatalf("batches %q, want one holding chunk, the prune mark's and the move marks' absence, record (created), root and the name's absence", got)
	}
	if locks, err := be.List(ctx, locksDir); err == nil && len(locks) > 0 || err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("locks after a lock-free put: %v, %v", locks, err)
	}
	sameFile(t, dev(), src, "one")
}

// unreferencedChunk stores a 4 KiB file, removes it and forgets every older snapshot, so
// that its one chunk W is stored and referenced by no record; it returns the device that
// did it, a scratch folder and W's content.
func unreferencedChunk(t *testing.T, dev func() *Client) (owner *Client, dir string, content []byte) {
	t.Helper()
	owner, dir, content = dev(), t.TempDir(), randBytes(4096, 31)
	gone := filepath.Join(dir, "gone")
	write(t, gone, content)
	if _, err := owner.Put(ctx, []string{gone}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Remove(ctx, "gone", false); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	return owner, dir, content
}

// The dangerous point for content a lock-free put sends: prune has planned (it saw no
// record using chunk W, an old copy of which is stored) and is about to delete W, when a
// put of a new file with the same content commits W and a record pointing to it. Without
// the prune mark the put would commit and prune delete W under it; with it the put's batch
// is refused, the put goes to the lock and finds prune's: it fails, stores nothing, and
// succeeds once prune is done.
func TestLocklessPutRefusedWhilePruneDeletes(t *testing.T) {
	be, dev := newGateBE(t)
	_, dir, content := unreferencedChunk(t, dev)
	planned, resume := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	be.onDelete = func(d, _ string) {
		if strings.HasPrefix(d, chunkRoot+"/") && first.CompareAndSwap(false, true) {
			close(planned)
			<-resume
		}
	}
	pruned := make(chan error, 1)
	go func() {
		res, err := dev().Prune(ctx, 0, false)
		if err == nil && res.ChunksRemoved != 1 {
			err = errors.New("prune removed " + itoa(res.ChunksRemoved) + " chunks, want W")
		}
		pruned <- err
	}()
	select {
	case <-planned:
	case err := <-pruned:
		t.Fatalf("prune ended before deleting a chunk: %v", err)
	}
	again := filepath.Join(dir, "again")
	write(t, again, content) // the same content: chunk W
	before := be.absents.Load()
	putter := dev()
	_, perr := putter.Put(ctx, []string{again}, "")
	if be.absents.Load() == before {
		t.Fatal("the put did not try to commit without the lock")
	}
	close(resume)
	if err := <-pruned; err != nil {
		t.Fatal(err)
	}
	if perr != nil {
		if !errors.Is(perr, ErrLocked) {
			t.Fatalf("put while prune deletes: %v, want it refused (ErrLocked) or stored whole", perr)
		}
		if _, err := putter.Put(ctx, []string{again}, ""); err != nil {
			t.Fatal(err)
		}
	}
	sameFile(t, dev(), again, "again")
}

// The dangerous point for content a lock-free put reuses without sending: a put of a file
// whose content is unchanged (only its mtime) reuses the stored chunk Y and sends none.
// While its batch is on its way, another device replaces the file, forgets the old
// snapshot and prunes: Y is deleted (nothing refers to it). The put's batch then finds its
// root number taken; had it been rebuilt on the winner's root as it was, its record would
// point to the deleted Y. It is refused and the put starts again under the lock: it reads
// the file's record anew, sends Y again, and the file reads back.
func TestLocklessPutLostRaceStartsAgain(t *testing.T) {
	be, dev := newGateBE(t)
	a, b := dev(), dev()
	dir := t.TempDir()
	mine, theirs := filepath.Join(dir, "mine", "f"), filepath.Join(dir, "theirs", "f")
	os.MkdirAll(filepath.Dir(mine), 0o755)
	os.MkdirAll(filepath.Dir(theirs), 0o755)
	write(t, mine, randBytes(4096, 32))
	write(t, theirs, randBytes(4096, 33))
	earlier := time.Now().Add(-time.Hour) // not taken for mine unchanged (same size, mtime, mode)
	if err := os.Chtimes(theirs, earlier, earlier); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, []string{mine}, ""); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(mine, later, later); err != nil {
		t.Fatal(err)
	}
	paused, resume := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	be.onBatch = func(objs []storage.Object) {
		if isLockless(objs) && first.CompareAndSwap(false, true) { // a's batch only
			close(paused)
			<-resume
		}
	}
	done := make(chan error, 1)
	go func() { _, err := a.Put(ctx, []string{mine}, ""); done <- err }()
	<-paused
	if _, err := b.Put(ctx, []string{theirs}, ""); err != nil { // replaces f: Y unreferenced
		t.Fatal(err)
	}
	if _, err := b.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	res, err := b.Prune(ctx, 0, false)
	if err != nil || res.ChunksRemoved == 0 {
		t.Fatalf("prune: %+v, %v; want chunk Y removed", res, err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sameFile(t, dev(), mine, "f")
}

// A second master key is refused before it writes anything, on the lock-free path too:
// the owner's root does not open under it, so its key check is read (ErrForeignKey),
// whether root checks are strict or only warn.
func TestLocklessPutForeignKeyRefused(t *testing.T) {
	be, dev := newGateBE(t)
	src := filepath.Join(t.TempDir(), "f")
	write(t, src, randBytes(4096, 34))
	if _, err := dev().Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []RootCheck{RootStrict, RootWarn} {
		var writes atomic.Int64
		be.onBatch = func([]storage.Object) { writes.Add(1) }
		intruder, err := New(be, NewMasterKey(), Options{Keys: mle.LocalKeys{}, RootCheck: mode})
		if err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(t.TempDir(), "g")
		write(t, other, randBytes(4096, 35))
		if _, err := intruder.Put(ctx, []string{other}, ""); !errors.Is(err, ErrForeignKey) {
			t.Fatalf("mode %d: intruder's put: %v, want ErrForeignKey", mode, err)
		}
		intruder.Close()
		if writes.Load() != 0 {
			t.Fatalf("mode %d: the intruder sent %d batches", mode, writes.Load())
		}
	}
	be.onBatch = nil
	sameFile(t, dev(), src, "f")
}

// A service older than batch version 3 refuses the lock-free batch (400, nothing stored):
// the file is put under the lock, and the client does not try without it again.
func TestLocklessPutOlderService(t *testing.T) {
	be, dev := newGateBE(t)
	c := dev()
	dir := t.TempDir()
	for i, name := range []string{"first", "second", "third"} {
		src := filepath.Join(dir, name)
		write(t, src, randBytes(4096, uint64(40+i)))
		if i == 1 {
			be.refuseAbsent = true
		}
		if _, err := c.Put(ctx, []string{src}, ""); err != nil {
			t.Fatal(err)
		}
		sameFile(t, dev(), src, name)
	}
	if got := be.absents.Load(); got != 1 {
		t.Fatalf("%d lock-free batches sent; want 1 (refused once, then not tried again)", got)
	}
}

// A prescanned lone put whose lock-free batch is refused is put again under the lock from
// the same walk (the walk is read, never consumed): the file is stored once and reads back.
func TestLocklessPutRefusedReusesPrescan(t *testing.T) {
	be, dev := newGateBE(t)
	dir := t.TempDir()
	first, src := filepath.Join(dir, "first"), filepath.Join(dir, "f")
	write(t, first, randBytes(4096, 49))
	write(t, src, randBytes(4096, 50))
	c := dev()
	if _, err := c.Put(ctx, []string{first}, ""); err != nil { // a root to build on
		t.Fatal(err)
	}
	be.absents.Store(0)
	be.refuseAbsent = true
	var progress atomic.Int64 // the refused attempt's bytes are not reported: once, not twice
	c.opts.Events.Bytes = func(n int64) { progress.Add(n) }
	sum, err := c.PutScanned(ctx, StartPrescan([]string{src}, "", nil))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 1 || len(sum.Errors) != 0 || be.absents.Load() != 1 || progress.Load() != 4096 {
		t.Fatalf("put: %d files, errors %v, %d lock-free batches, progress %d bytes; want 1 file, none, 1 (refused, then locked), 4096",
			sum.Files, sum.Errors, be.absents.Load(), progress.Load())
	}
	sameFile(t, dev(), src, "f")
}

// A lone put asks for its file's key once, early (while the root is read), and uses that
// answer; a put of the same file unchanged drops its early answer (one key request it
// did not make before); a file changed after its early read is derived again, for the
// content it stores.
func TestLonePutDerivesEarlyOnce(t *testing.T) {
	be, _ := newGateBE(t)
	ks := &countingKS{}
	c := newClient(t, be, ks)
	dir := t.TempDir()
	first, src := filepath.Join(dir, "first"), filepath.Join(dir, "f")
	write(t, first, randBytes(4096, 60))
	if _, err := c.Put(ctx, []string{first}, ""); err != nil { // a root to build on
		t.Fatal(err)
	}
	write(t, src, randBytes(4096, 61))
	ks.n.Store(0)
	if sum, err := c.Put(ctx, []string{src}, ""); err != nil || be.absents.Load() == 0 || sum.ChunksUploaded != 1 {
		t.Fatalf("lone put: %v, %d lock-free batches, %+v", err, be.absents.Load(), sum)
	}
	if got := ks.n.Load(); got != 1 {
		t.Fatalf("lone put of a new file asked for %d keys, want 1 (the early request, taken)", got)
	}
	sameFile(t, c, src, "f")
	ks.n.Store(0)
	if sum, err := c.Put(ctx, []string{src}, ""); err != nil || sum.Unchanged != 1 || ks.n.Load() != 1 {
		t.Fatalf("unchanged lone put: %v, %d unchanged, %d keys asked; want 1 and 1", err, sum.Unchanged, ks.n.Load())
	}
}

// An early answer is taken only by a request for the same digests: a file changed after
// its early read is derived again, for the content the put read.
func TestEarlyKeysOnlyForTheSameContent(t *testing.T) {
	ks := &countingKS{}
	s := newKeySource(ks)
	a, b := mle.Digest{1}, mle.Digest{2}
	s.deriveEarly(ctx, a)
	got, err := s.derive(ctx, []mle.Digest{b})
	want, _ := mle.LocalKeys{}.DeriveKeys(ctx, []mle.Digest{b})
	if err != nil || len(got) != 1 || got[0] != want[0] {
		t.Fatalf("other content: %v; want b's key", err)
	}
	got, err = s.derive(ctx, []mle.Digest{a})
	want, _ = mle.LocalKeys{}.DeriveKeys(ctx, []mle.Digest{a})
	if err != nil || len(got) != 1 || got[0] != want[0] || ks.n.Load() != 2 {
		t.Fatalf("the early content: %v, %d digests asked; want a's key from the early answer, 2 asked in all", err, ks.n.Load())
	}
	s.dropEarly() // nothing left: returns at once
}

// hangKD is a key server that never answers: each request waits for its context's end.
type hangKD struct{ asked, ended atomic.Int64 }

func (k *hangKD) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	k.asked.Add(1)
	<-ctx.Done()
	k.ended.Add(1)
	return nil, ctx.Err()
}

// A lone put of an unchanged file with a key server that does not answer: its early key
// request is cancelled when the put finds the file unchanged, so the put does not wait for
// it (it would hang here), and the key server is not marked down for it.
func TestUnchangedLonePutDropsEarlyRequest(t *testing.T) {
	be, _ := newGateBE(t)
	master := NewMasterKey()
	open := func(kd mle.KeyDeriver) *Client {
		c, err := New(be, master, Options{Keys: kd})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	dir := t.TempDir()
	first, src := filepath.Join(dir, "first"), filepath.Join(dir, "f")
	write(t, first, randBytes(100, 80))
	write(t, src, randBytes(4096, 81))
	c := open(mle.LocalKeys{})
	for _, p := range []string{first, src} {
		if _, err := c.Put(ctx, []string{p}, ""); err != nil {
			t.Fatal(err)
		}
	}
	kd := &hangKD{}
	c = open(kd)
	sum, err := c.Put(ctx, []string{src}, "")
	if err != nil || sum.Unchanged != 1 {
		t.Fatalf("unchanged lone put: %v, %+v", err, sum)
	}
	if kd.asked.Load() != 1 || kd.ended.Load() != 1 {
		t.Fatalf("early requests: %d asked, %d ended; want 1 and 1 (cancelled)", kd.asked.Load(), kd.ended.Load())
	}
	c.ks.mu.Lock()
	down := c.ks.downUntil
	c.ks.mu.Unlock()
	if !down.IsZero() {
		t.Fatal("the key server was marked down by a cancelled early request")
	}
}

// In a namespace whose root is past 64 KiB, a lone small put still goes without the lock
// when the service takes a large batch object: its root is that object. A service older
// than that refuses the batch (ErrTooLarge, nothing stored): the put goes under the lock
// and publishes its root by move, and the client sends no large batch again.
//
// Roots are written as version 1 here whatever their size (as an older veil wrote them):
// since tree bases (rootbase.go) a root past 32 KiB of entries is a small version 2 one.
func TestLocklessPutLargeRoot(t *testing.T) {
	rootForms(t, 1<<30, rootDeltaMax)
	be, _ := newGateBE(t)
	be.large = true
	dev := devices(t, largeGateBE{be})
	tree := filepath.Join(t.TempDir(), "tree")
	for i := range 1200 {
		write(t, filepath.Join(tree, fmt.Sprintf("d%d", i%10), fmt.Sprintf("file-%04d", i)), []byte(fmt.Sprint(i)))
	}
	c := dev()
	if _, err := c.Put(ctx, []string{tree}, ""); err != nil {
		t.Fatal(err)
	}
	if c.view.root.size <= storage.BatchMaxObjectSize {
		t.Fatalf("root of %d bytes: the test needs one past 64 KiB", c.view.root.size)
	}
	dir := t.TempDir()
	for i, name := range []string{"first", "second", "third"} {
		src := filepath.Join(dir, name)
		write(t, src, randBytes(4096, uint64(50+i)))
		be.refuseLarge = i > 0
		absents, larges := be.absents.Load(), be.larges.Load()
		if _, err := c.Put(ctx, []string{src}, "tree/d3"); err != nil {
			t.Fatal(err)
		}
		sameFile(t, dev(), src, "tree/d3/"+name)
		// The first goes lock-free, its root the large object; the second is refused
		// once; the third does not try.
		if got, want := be.absents.Load()-absents, []int64{1, 0, 0}[i]; got != want {
			t.Fatalf("put %d: %d lock-free batches, want %d", i, got, want)
		}
		if got, want := be.larges.Load()-larges, []int64{1, 1, 0}[i]; got != want {
			t.Fatalf("put %d: %d batches with a large object, want %d", i, got, want)
		}
	}
}

// A lone lock-free put reads only the root its device remembers (one root GET, not n+1
// beside it): its batch creates n+1, so when another device has published n+1 meanwhile
// the batch is refused and the put goes under the lock, onto the newest root. Nothing of
// either device is lost.
func TestLocklessPutReadsRememberedRoot(t *testing.T) {
	rr := &rootReqBE{countingBE: countingBE{Backend: newBackend(t)}}
	be := &gateBE{absentBE: absentBE{&condBE{Backend: rr}}}
	device := memDevices(t, be)
	a, b := device(), device()
	dir := t.TempDir()
	put := func(c *Client, name string, seed uint64) {
		t.Helper()
		src := filepath.Join(dir, name)
		write(t, src, randBytes(4096, seed))
		if _, err := c.Put(ctx, []string{src}, ""); err != nil {
			t.Fatal(err)
		}
	}
	put(a(), "first", 61) // a new namespace: under the lock, which writes the key check
	put(a(), "second", 62)
	gets, absents := rr.gets.Load(), be.absents.Load()
	put(a(), "third", 63)
	if g, n := rr.gets.Load()-gets, be.absents.Load()-absents; g != 1 || n != 1 {
		t.Fatalf("lone put: %d root GETs and %d lock-free batches, want 1 and 1", g, n)
	}
	put(b(), "other", 64)
	lost := be.lost.Load()
	put(a(), "fourth", 65) // a remembers the root of "third"; b published the next one
	if got := be.lost.Load() - lost; got != 1 {
		t.Fatalf("%d refused creates, want 1: the lock-free batch on a's remembered root", got)
	}
	c := a()
	for _, name := range []string{"first", "second", "third", "other", "fourth"} {
		sameFile(t, c, filepath.Join(dir, name), name)
	}
}

// memDevices returns a maker of devices of one user over be: each device remembers its
// tree root in a file of its own and makes a fresh Client per command, with ev.
func memDevices(t *testing.T, be storage.Backend, ev ...Events) func() func() *Client {
	master := NewMasterKey()
	return func() func() *Client {
		mem := RootFile(filepath.Join(t.TempDir(), "root.mem"), "")
		return func() *Client {
			o := Options{Keys: mle.LocalKeys{}, Roots: mem}
			if len(ev) > 0 {
				o.Events = ev[0]
			}
			c, err := New(be, master, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}
	}
}

// A lone put of a file that device A finds unchanged against the root it remembers sends
// no batch, so nothing conditions it on that root being the newest: when device B has
// since replaced the file, or removed it, A's put must not report it unchanged and leave
// B's state; it goes under the lock and stores A's file (unbatchedStillNewest). Found by
// review: both failed with the single root read and no such check. The file is reported
// once (Events.File), by the put under the lock: a second review found the refused
// lock-free attempt reporting it too.
func TestLocklessUnchangedPutOnStaleRoot(t *testing.T) {
	for _, other := range []string{"replaces", "removes"} {
		t.Run(other, func(t *testing.T) {
			be := &gateBE{absentBE: absentBE{&condBE{Backend: newBackend(t)}}}
			var reported atomic.Int64
			device := memDevices(t, be, Events{File: func(string, error) { reported.Add(1) }})
			a, b := device(), device()
			dirA, dirB := t.TempDir(), t.TempDir()
			seed, fa, fb := filepath.Join(dirA, "seed"), filepath.Join(dirA, "f"), filepath.Join(dirB, "f")
			write(t, seed, []byte("seed")) // a new namespace's first put takes the lock
			write(t, fa, randBytes(4096, 71))
			for _, p := range []string{seed, fa} {
				if _, err := a().Put(ctx, []string{p}, ""); err != nil {
					t.Fatal(err)
				}
			}
			if other == "replaces" {
				write(t, fb, randBytes(4096, 72))
				if _, err := b().Put(ctx, []string{fb}, ""); err != nil {
					t.Fatal(err)
				}
			} else if _, err := b().Remove(ctx, "f", false); err != nil {
				t.Fatal(err)
			}
			reported.Store(0)
			s, err := a().Put(ctx, []string{fa}, "")
			if err != nil {
				t.Fatal(err)
			}
			if n := reported.Load(); n != 1 || s.Files != 1 {
				t.Fatalf("one file put: reported %d times, summary counts %d files", n, s.Files)
			}
			sameFile(t, b(), fa, "f")
		})
	}
}

// fillingBE is a service whose disk fills up: once full is set, storing a kept version
// (the first write of a lone put that replaces a file) fails with ErrNoSpace. Like the
// remote client, it fails a read whose context has ended.
type fillingBE struct {
	*gateBE
	full atomic.Bool
}

func (b *fillingBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if b.full.Load() && strings.HasPrefix(dir, versionsDir) {
		return storewire.ErrNoSpace
	}
	return b.gateBE.Put(ctx, dir, name, r, size)
}

func (b *fillingBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.gateBE.Get(ctx, dir, name)
}

// A lone lock-free put on a service that can store nothing stops, and says why ("put
// stopped: ... out of disk space"), as a put under the lock does. Found by review: the
// check that root n is still the newest (unbatchedStillNewest) ran on the stopped run's
// cancelled context and reported "context canceled" instead.
func TestLocklessPutOutOfSpaceSaysWhy(t *testing.T) {
	be := &fillingBE{gateBE: &gateBE{absentBE: absentBE{&condBE{Backend: newBackend(t)}}}}
	dev := devices(t, be)
	dir := t.TempDir()
	seed, f := filepath.Join(dir, "seed"), filepath.Join(dir, "f")
	write(t, seed, []byte("seed"))
	write(t, f, randBytes(4096, 81))
	for _, p := range []string{seed, f} {
		if _, err := dev().Put(ctx, []string{p}, ""); err != nil {
			t.Fatal(err)
		}
	}
	write(t, f, randBytes(4096, 82)) // changed: the put keeps the previous version first
	be.full.Store(true)
	_, err := dev().Put(ctx, []string{f}, "")
	if !errors.Is(err, storage.ErrCannotStore) || !strings.Contains(err.Error(), "put stopped") {
		t.Fatalf("put on a full service: %v, want put stopped: %v", err, storewire.ErrNoSpace)
	}
}

// A forget that drops the root a lock-free put read, and its successor, while the put's
// batch is on its way must not free the successor under it: device A remembers root n, B
// has published n+1 (replacing f) to n+3, A's put of f reads n, and B's forget --keep-last
// 1 runs before A's batch arrives. Found by review: the forget deleted n+1, A's create of
// it succeeded, A's record replaced B's without B's version kept anywhere, and the newest
// root listed B's hash over A's record: f unreadable. Dropped roots are gap marks now, so
// the batch is refused and the put goes under the lock.
func TestLocklessPutRacesForget(t *testing.T) {
	be := &gateBE{absentBE: absentBE{&condBE{Backend: newBackend(t)}}}
	device := memDevices(t, be)
	a, b, fa := staleByThree(t, device)
	putRacingForget(t, be, device, a, b, fa)
}

// staleByThree sets up device a, which stored f at root n (roots 1 and n = 2 are its)
// and remembers n, and device b, which has since replaced f (3) and published two roots
// more (4, 5); f is then rewritten locally for a's next put, whose path it returns.
func staleByThree(t *testing.T, device func() func() *Client) (a, b func() *Client, fa string) {
	t.Helper()
	a, b = device(), device()
	dirA, dirB := t.TempDir(), t.TempDir()
	put := func(c *Client, src string, data []byte) {
		t.Helper()
		write(t, src, data)
		if _, err := c.Put(ctx, []string{src}, ""); err != nil {
			t.Fatal(err)
		}
	}
	put(a(), filepath.Join(dirA, "seed"), []byte("seed"))
	fa = filepath.Join(dirA, "f")
	put(a(), fa, randBytes(4096, 81))
	put(b(), filepath.Join(dirB, "f"), randBytes(4096, 82))
	put(b(), filepath.Join(dirB, "g"), []byte("g"))
	put(b(), filepath.Join(dirB, "h"), []byte("h"))
	write(t, fa, randBytes(4096, 83))
	return a, b, fa
}

// putRacingForget puts fa through device a while b's 'forget --keep-last 1' runs as a's
// lock-free batch goes out, and checks that f then reads as a's file.
func putRacingForget(t *testing.T, be *gateBE, device func() func() *Client, a, b func() *Client, fa string) {
	t.Helper()
	var forgot atomic.Bool
	be.onBatch = func(objs []storage.Object) {
		if isLockless(objs) && forgot.CompareAndSwap(false, true) {
			if _, err := b().Forget(ctx, Policy{Last: 1}, false); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := a().Put(ctx, []string{fa}, ""); err != nil {
		t.Fatal(err)
	}
	be.onBatch = nil
	if !forgot.Load() {
		t.Fatal("a's put sent no lock-free batch: the race was not run")
	}
	sameFile(t, device()(), fa, "f")
}
