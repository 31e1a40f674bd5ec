package storagetest

import (
	"bytes"
	"context"
	"errors"
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
