package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	bp, ok := b.(storage.BatchPutter)
	if !ok {
		t.Logf("no batch upload: PutAll stores one object at a time")
		return
	}
	// Invalid anywhere: nothing of the batch is stored.
	bad := []struct {
		what string
		objs []storage.Object
		want error
	}{
		{"a bad name", []storage.Object{{Dir: "b1", Name: "ok", Data: []byte("1")}, {Dir: "b1", Name: "..", Data: []byte("2")}}, storage.ErrInvalidName},
		{"an object too large", []storage.Object{{Dir: "b2", Name: "ok", Data: []byte("1")}, {Dir: "b2", Name: "big", Data: fill('b', storage.BatchMaxObjectSize+1)}}, storage.ErrTooLarge},
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

func firstNonNil(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
