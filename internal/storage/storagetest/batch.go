package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// testBatch: storage.PutAll stores every object (through PutBatch where the backend has
// one, else one Put each); a BatchPutter also keeps a batch atomic and checks it whole.
func testBatch(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	put(t, b, "old", "x", []byte("before"))
	objs := []storage.Object{
		{Dir: "new/deep", Name: "a", Data: []byte("alpha")},
		{Dir: "", Name: "top", Data: fill('t', storage.BatchMaxObjectSize)},
		{Dir: "old", Name: "x", Data: []byte("after")},
		{Dir: "new/deep", Name: "empty", Data: nil},
		{Dir: "dup", Name: "same", Data: []byte("alpha")}, // content the backend holds already
	}
	if err := storage.PutAll(ctx, b, objs); err != nil {
		t.Fatalf("put all: %v", err)
	}
	for _, o := range objs {
		if got := get(t, b, o.Dir, o.Name); !bytes.Equal(got, o.Data) {
			t.Fatalf("%s/%s: got %d bytes, want %d", o.Dir, o.Name, len(got), len(o.Data))
		}
	}
	if got := names(t, b, "new/deep"); got != "a,empty" {
		t.Fatalf("list new/deep: %q", got)
	}
	testBatchCreate(t, b)
	testBatchAbsent(t, b)
	testBatchMatch(t, b)
	testBatchLarge(t, b)
	bp, ok := b.(storage.BatchPutter)
	if !ok {
		t.Logf("no batch upload: PutAll stores one object at a time")
		return
	}
	tooLarge := storage.BatchMaxObjectSize + 1
	if _, ok := b.(storage.LargeBatcher); ok {
		tooLarge = storage.BatchMaxBytes + 1
	}
	// Invalid anywhere: nothing of the batch is stored.
	bad := []struct {
		what string
		objs []storage.Object
		want error
	}{
		{"a bad name", []storage.Object{{Dir: "b1", Name: "ok", Data: []byte("1")}, {Dir: "b1", Name: "..", Data: []byte("2")}}, storage.ErrInvalidName},
		{"an object too large", []storage.Object{{Dir: "b2", Name: "ok", Data: []byte("1")}, {Dir: "b2", Name: "big", Data: fill('b', tooLarge)}}, storage.ErrTooLarge},
		{"onto a directory", []storage.Object{{Dir: "b3", Name: "ok", Data: []byte("1")}, {Dir: "", Name: "new", Data: []byte("2")}}, storage.ErrIsDir},
		{"below a file", []storage.Object{{Dir: "b4", Name: "ok", Data: []byte("1")}, {Dir: "top", Name: "under", Data: []byte("2")}}, storage.ErrNotDir},
	}
	for _, c := range bad {
		err := bp.PutBatch(ctx, c.objs)
		if !errors.Is(err, c.want) {
			t.Fatalf("batch with %s: %v, want %v", c.what, err, c.want)
		}
		if _, err := b.Stat(ctx, c.objs[0].Dir, "ok"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("batch with %s: its valid object was stored (stat: %v)", c.what, err)
		}
	}
	if err := bp.PutBatch(ctx, nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	// The same object twice in one batch: the last one wins, as with two Puts.
	if err := bp.PutBatch(ctx, []storage.Object{{Dir: "twice", Name: "f", Data: []byte("1")}, {Dir: "twice", Name: "f", Data: []byte("22")}}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, b, "twice", "f"); string(got) != "22" {
		t.Fatalf("twice/f: %q", got)
	}
}

// testBatchLarge: a LargeBatcher takes one object over storage.BatchMaxObjectSize in a
// batch, conditional or not, atomically with the others; a batch with two such objects, or
// whose one large object is a create of a taken name, stores nothing.
func testBatchLarge(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	lb, ok := b.(storage.LargeBatcher)
	if !ok {
		return
	}
	big := fill('L', storage.BatchMaxObjectSize*3+7)
	objs := []storage.Object{{Dir: "l1", Name: "small", Data: []byte("s")}, {Dir: "l1", Name: "big", Data: big, Create: true}}
	if err := lb.PutBatch(ctx, objs); err != nil {
		t.Fatalf("batch with one large object: %v", err)
	}
	for _, o := range objs {
		if got := get(t, b, o.Dir, o.Name); !bytes.Equal(got, o.Data) {
			t.Fatalf("%s/%s: got %d bytes, want %d", o.Dir, o.Name, len(got), len(o.Data))
		}
	}
	again := []storage.Object{{Dir: "l2", Name: "ok", Data: []byte("1")}, {Dir: "l1", Name: "big", Data: fill('M', len(big)), Create: true}}
	if err := lb.PutBatch(ctx, again); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("large create of a taken name: %v, want ErrExists", err)
	}
	if got := get(t, b, "l1", "big"); !bytes.Equal(got, big) {
		t.Fatal("a refused large create replaced the object")
	}
	two := []storage.Object{{Dir: "l3", Name: "ok", Data: []byte("1")}, {Dir: "l3", Name: "a", Data: big}, {Dir: "l3", Name: "b", Data: big}}
	if err := lb.PutBatch(ctx, two); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("batch with two large objects: %v, want ErrTooLarge", err)
	}
	for _, c := range []storage.Object{again[0], two[0]} {
		if _, err := b.Stat(ctx, c.Dir, c.Name); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a refused batch stored %s/%s (stat: %v)", c.Dir, c.Name, err)
		}
	}
}

// testBatchCreate: a conditional object (Create) is stored only if its name is free, else
// the whole batch fails with ErrExists and stores nothing; of two batches racing to
// create one name exactly one wins. A backend without conditional batches refuses them.
func testBatchCreate(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	if _, ok := b.(storage.CreateBatcher); !ok {
		err := storage.PutAll(ctx, b, []storage.Object{{Dir: "c0", Name: "x", Data: []byte("1"), Create: true}})
		if !errors.Is(err, storage.ErrNoConditions) {
			t.Fatalf("conditional object on a backend without conditions: %v", err)
		}
		return
	}
	first := []storage.Object{{Dir: "c1", Name: "with", Data: []byte("w1")}, {Dir: "c1", Name: "n", Data: []byte("one"), Create: true}}
	if err := storage.PutAll(ctx, b, first); err != nil {
		t.Fatalf("create a free name: %v", err)
	}
	again := []storage.Object{{Dir: "c1", Name: "other", Data: []byte("w2")}, {Dir: "c1", Name: "n", Data: []byte("two"), Create: true}}
	if err := storage.PutAll(ctx, b, again); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("create a taken name: %v, want ErrExists", err)
	}
	if got := get(t, b, "c1", "n"); string(got) != "one" {
		t.Fatalf("taken name replaced: %q", got)
	}
	if _, err := b.Stat(ctx, "c1", "other"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a failed conditional batch stored its other object (stat: %v)", err)
	}
	for round := 0; round < 5; round++ {
		name := fmt.Sprintf("race%d", round)
		errs := make(chan error, 2)
		for i := 0; i < 2; i++ {
			go func() {
				errs <- storage.PutAll(ctx, b, []storage.Object{{Dir: "c2", Name: name, Data: []byte{byte(i)}, Create: true}})
			}()
		}
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) || !errors.Is(firstNonNil(e1, e2), storage.ErrExists) {
			t.Fatalf("two creates of %s: %v and %v, want exactly one ErrExists", name, e1, e2)
		}
	}
}

// testBatchAbsent: an absent condition stores nothing under its name; the batch is stored
// only if that name is free, else it fails with ErrExists and stores nothing; a batch that
// creates a name and one that requires it absent exclude each other. A backend without
// absent conditions refuses them.
func testBatchAbsent(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	if _, ok := b.(storage.AbsentBatcher); !ok {
		err := storage.PutAll(ctx, b, []storage.Object{{Dir: "a0", Name: "m", Absent: true}, {Dir: "a0", Name: "x", Data: []byte("1")}})
		if !errors.Is(err, storage.ErrNoConditions) {
			t.Fatalf("absent condition on a backend without it: %v", err)
		}
		if _, err := b.Stat(ctx, "a0", "x"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a refused absent batch stored its object (stat: %v)", err)
		}
		return
	}
	free := []storage.Object{{Dir: "a1", Name: "m", Absent: true}, {Dir: "a1", Name: "x", Data: []byte("one")}}
	if err := storage.PutAll(ctx, b, free); err != nil {
		t.Fatalf("batch with a free absent name: %v", err)
	}
	if _, err := b.Stat(ctx, "a1", "m"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an absent condition stored an object (stat: %v)", err)
	}
	put(t, b, "a1", "m", []byte("marker"))
	taken := []storage.Object{{Dir: "a1", Name: "y", Data: []byte("two")}, {Dir: "a1", Name: "m", Absent: true}}
	if err := storage.PutAll(ctx, b, taken); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("batch with a taken absent name: %v, want ErrExists", err)
	}
	if _, err := b.Stat(ctx, "a1", "y"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a failed absent batch stored its other object (stat: %v)", err)
	}
	if got := get(t, b, "a1", "m"); string(got) != "marker" {
		t.Fatalf("the absent name's object changed: %q", got)
	}
	if err := storage.PutAll(ctx, b, []storage.Object{{Dir: "a1", Name: "m", Data: []byte("x"), Absent: true}}); err == nil {
		t.Fatalf("an absent condition with content was accepted")
	}
	// A create and an absent condition on one name, racing: the create always commits;
	// the absent batch commits only if it came first (serialized, never half stored).
	for round := 0; round < 5; round++ {
		name := fmt.Sprintf("m%d", round)
		cerr, aerr := make(chan error, 1), make(chan error, 1)
		go func() {
			cerr <- storage.PutAll(ctx, b, []storage.Object{{Dir: "a2", Name: name, Data: []byte("c"), Create: true}})
		}()
		go func() {
			aerr <- storage.PutAll(ctx, b, []storage.Object{{Dir: "a2", Name: name, Absent: true}, {Dir: "a2", Name: name + "-w", Data: []byte("w")}})
		}()
		ec, ea := <-cerr, <-aerr
		_, werr := b.Stat(ctx, "a2", name+"-w")
		switch {
		case ec != nil:
			t.Fatalf("round %d: the create failed: %v", round, ec)
		case ea != nil && !errors.Is(ea, storage.ErrExists):
			t.Fatalf("round %d: the absent batch: %v, want nil or ErrExists", round, ea)
		case (werr == nil) != (ea == nil):
			t.Fatalf("round %d: the absent batch's object stored %v, its batch answered %v", round, werr == nil, ea)
		}
	}
}

// testBatchMatch: a match condition (Match) stores its object only over a file whose
// content hashes to *Match, as found before the batch; else (other content, no object, a
// directory) the whole batch fails with ErrChanged and stores nothing. A match goes with
// neither Create nor Absent. Of two batches racing to replace the same content exactly one
// wins. A backend without match conditions refuses them.
func testBatchMatch(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	sum := func(s string) *[32]byte { h := sha256.Sum256([]byte(s)); return &h }
	if _, ok := b.(storage.MatchBatcher); !ok {
		put(t, b, "m0", "f", []byte("v1"))
		err := storage.PutAll(ctx, b, []storage.Object{{Dir: "m0", Name: "x", Data: []byte("1")}, {Dir: "m0", Name: "f", Data: []byte("v2"), Match: sum("v1")}})
		if !errors.Is(err, storage.ErrNoConditions) {
			t.Fatalf("match condition on a backend without it: %v", err)
		}
		if _, err := b.Stat(ctx, "m0", "x"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a refused match batch stored its object (stat: %v)", err)
		}
		if got := get(t, b, "m0", "f"); string(got) != "v1" {
			t.Fatalf("a refused match batch replaced its object: %q", got)
		}
		return
	}
	notStored := func(what string, objs ...storage.Object) {
		t.Helper()
		for _, o := range objs {
			if _, err := b.Stat(ctx, o.Dir, o.Name); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("%s: the refused batch stored %s/%s (stat: %v)", what, o.Dir, o.Name, err)
			}
		}
	}
	put(t, b, "m1", "f", []byte("v1"))
	held := []storage.Object{{Dir: "m1", Name: "other", Data: []byte("o1")}, {Dir: "m1", Name: "f", Data: []byte("v2"), Match: sum("v1")}}
	if err := storage.PutAll(ctx, b, held); err != nil {
		t.Fatalf("a match that holds: %v", err)
	}
	for _, o := range held {
		if got := get(t, b, o.Dir, o.Name); !bytes.Equal(got, o.Data) {
			t.Fatalf("a match that holds: %s/%s is %q, want %q", o.Dir, o.Name, got, o.Data)
		}
	}
	b.Create(ctx, "m1/dir")
	put(t, b, "m1/dir", "inner", []byte("v1"))
	put(t, b, "m1", "empty", nil)
	failing := []struct {
		what string
		obj  storage.Object
	}{
		{"a match on changed content", storage.Object{Dir: "m1", Name: "f", Data: []byte("v3"), Match: sum("v1")}},
		{"a match on a missing object", storage.Object{Dir: "m1", Name: "missing", Data: []byte("v3"), Match: sum("v1")}},
		{"a match below a file", storage.Object{Dir: "m1/f", Name: "under", Data: []byte("v3"), Match: sum("v2")}},
		{"a match on a directory", storage.Object{Dir: "m1", Name: "dir", Data: []byte("v3"), Match: sum("")}},
		{"a match of no hash (zeros) on a directory", storage.Object{Dir: "m1", Name: "dir", Data: []byte("v3"), Match: new([32]byte)}},
		{"a match of other content on an empty file", storage.Object{Dir: "m1", Name: "empty", Data: []byte("v3"), Match: sum("v1")}},
		// Conditions hold on what is stored before the batch, whatever the batch writes.
		{"a match on what the batch itself writes", storage.Object{Dir: "m1", Name: "f", Data: []byte("v3"), Match: sum("mine")}},
	}
	for i, c := range failing {
		before := storage.Object{Dir: "m1/none", Name: fmt.Sprintf("before%d", i), Data: []byte("b")}
		after := storage.Object{Dir: "m1", Name: fmt.Sprintf("after%d", i), Data: []byte("a")}
		objs := []storage.Object{before, {Dir: "m1", Name: "f", Data: []byte("mine")}, c.obj, after}
		err := storage.PutAll(ctx, b, objs)
		if !errors.Is(err, storage.ErrChanged) {
			t.Fatalf("%s: %v, want ErrChanged", c.what, err)
		}
		if !strings.Contains(err.Error(), "batch object 2 ") {
			t.Errorf("%s: the error does not name the object (batch object 2): %v", c.what, err)
		}
		notStored(c.what, before, after)
		if got := get(t, b, "m1", "f"); string(got) != "v2" {
			t.Fatalf("%s: a refused batch replaced m1/f: %q", c.what, got)
		}
	}
	if infos, err := b.List(ctx, "m1/dir"); err != nil || len(infos) != 1 {
		t.Fatalf("a refused match on a directory changed it: %v %v", infos, err)
	}
	notStored("a match on a missing object", storage.Object{Dir: "m1", Name: "missing"})
	// Every match of a batch must hold: two that do, and the same with one that does not.
	two := []storage.Object{{Dir: "m1", Name: "f", Data: []byte("v3"), Match: sum("v2")}, {Dir: "m1", Name: "empty", Data: []byte("e2"), Match: sum("")}}
	if err := storage.PutAll(ctx, b, two); err != nil {
		t.Fatalf("two matches that hold: %v", err)
	}
	two = []storage.Object{{Dir: "m1", Name: "f", Data: []byte("v4"), Match: sum("v3")}, {Dir: "m1", Name: "empty", Data: []byte("e3"), Match: sum("")}}
	if err := storage.PutAll(ctx, b, two); !errors.Is(err, storage.ErrChanged) {
		t.Fatalf("two matches, one failing: %v, want ErrChanged", err)
	}
	if got := get(t, b, "m1", "f"); string(got) != "v3" {
		t.Fatalf("a refused batch replaced m1/f with the other match holding: %q", got)
	}
	// Content past the inline size (kept as a blob by the service) matches its SHA-256 too,
	// as does a large replacement.
	big := fill('B', storage.BatchMaxObjectSize+1000)
	put(t, b, "m1", "big", big)
	bigSum := sha256.Sum256(big)
	if err := storage.PutAll(ctx, b, []storage.Object{{Dir: "m1", Name: "big", Data: []byte("small now"), Match: &bigSum}}); err != nil {
		t.Fatalf("a match on content over %d bytes: %v", storage.BatchMaxObjectSize, err)
	}
	if _, ok := b.(storage.LargeBatcher); ok {
		big2 := fill('C', storage.BatchMaxObjectSize+2000)
		if err := storage.PutAll(ctx, b, []storage.Object{{Dir: "m1", Name: "big", Data: big2, Match: sum("small now")}}); err != nil {
			t.Fatalf("a large object with a match: %v", err)
		}
		if got := get(t, b, "m1", "big"); !bytes.Equal(got, big2) {
			t.Fatal("a large object with a match was not stored")
		}
	}
	// A match goes with neither create nor absent: refused before anything is stored.
	for _, o := range []storage.Object{
		{Dir: "m1", Name: "f", Data: []byte("v9"), Match: sum("v3"), Create: true},
		{Dir: "m1", Name: "f", Match: sum("v3"), Absent: true},
	} {
		objs := []storage.Object{{Dir: "m1", Name: "mixed", Data: []byte("x")}, o}
		if err := storage.CheckBatch(objs, true); err == nil {
			t.Fatalf("CheckBatch took a match with create %v, absent %v", o.Create, o.Absent)
		}
		if err := storage.PutAll(ctx, b, objs); err == nil {
			t.Fatalf("a match with create %v, absent %v was accepted", o.Create, o.Absent)
		}
		notStored("a match with another condition", objs[0])
		if got := get(t, b, "m1", "f"); string(got) != "v3" {
			t.Fatalf("a refused batch replaced m1/f: %q", got)
		}
	}
	// Two batches replacing the same content at once: exactly one wins, and nothing of
	// the other is stored.
	for round := 0; round < 5; round++ {
		name := fmt.Sprintf("race%d", round)
		put(t, b, "m2", name, []byte("base"))
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = storage.PutAll(ctx, b, []storage.Object{{Dir: "m2", Name: fmt.Sprintf("%s-%d", name, i), Data: []byte{byte(i)}},
					{Dir: "m2", Name: name, Data: []byte{'w', byte(i)}, Match: sum("base")}})
			}()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(firstNonNil(errs...), storage.ErrChanged) {
			t.Fatalf("two matches on %s: %v and %v, want exactly one ErrChanged", name, errs[0], errs[1])
		}
		won := 0
		if errs[0] != nil {
			won = 1
		}
		if got := get(t, b, "m2", name); !bytes.Equal(got, []byte{'w', byte(won)}) {
			t.Fatalf("round %d: %s is %q, want the winner's (%d)", round, name, got, won)
		}
		notStored("the losing match", storage.Object{Dir: "m2", Name: fmt.Sprintf("%s-%d", name, 1-won)})
	}
}

func firstNonNil(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
