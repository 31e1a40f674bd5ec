package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// testPutNew: a create (storage.Creator) stores an object only while its name is free,
// else ErrExists and the stored object stays; of racing creates of one name exactly one
// wins, whole. It makes parents as Put does and refuses what Put refuses; a failed one
// stores nothing and leaves the name free; the backend's probe (if it has one) leaves no
// object. A backend whose server does not honour creates says so (ErrNoConditions) and
// stores nothing. Backends without it have nothing to check.
func testPutNew(t *testing.T, b storage.Backend) {
	cr, ok := b.(storage.Creator)
	if !ok {
		return
	}
	ctx := context.Background()
	create := func(dir, name, data string) error {
		return cr.PutNew(ctx, dir, name, strings.NewReader(data), int64(len(data)))
	}
	err := create("pn/deep", "a", "one")
	if errors.Is(err, storage.ErrNoConditions) {
		if _, serr := b.Stat(ctx, "pn/deep", "a"); !errors.Is(serr, storage.ErrNotFound) {
			t.Fatalf("a create refused for want of conditions stored its object (stat: %v)", serr)
		}
		wantErr(t, "a second create on a backend without conditions", create("pn", "b", "x"), storage.ErrNoConditions)
		t.Logf("creates refused: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("create a free name: %v", err)
	}
	if got := names(t, b, "pn"); got != "deep/" {
		t.Fatalf("list pn after a create (its parent, and no probe left): %q", got)
	}
	if got := names(t, b, "pn/deep"); got != "a" {
		t.Fatalf("list pn/deep after a create: %q", got)
	}
	wantErr(t, "create a taken name", create("pn/deep", "a", "two"), storage.ErrExists)
	if got := string(get(t, b, "pn/deep", "a")); got != "one" {
		t.Fatalf("a create over a taken name replaced it: %q", got)
	}
	if err := cr.PutNew(ctx, "pn", "unsized", strings.NewReader("u"), -1); err != nil {
		t.Fatalf("create of unknown size: %v", err)
	}
	wantErr(t, "create of unknown size over a taken name", cr.PutNew(ctx, "pn", "unsized", strings.NewReader("v"), -1), storage.ErrExists)
	if got := string(get(t, b, "pn", "unsized")); got != "u" {
		t.Fatalf("a create of unknown size replaced a taken name: %q", got)
	}
	if err := create("pn", "empty", ""); err != nil {
		t.Fatalf("create an empty object: %v", err)
	}
	wantErr(t, "create an empty object again", create("pn", "empty", ""), storage.ErrExists)
	wantErr(t, "create onto a directory", create("pn", "deep", "x"), storage.ErrIsDir)
	wantErr(t, "create below a file", create("pn/deep/a", "x", "x"), storage.ErrNotDir)
	wantErr(t, "create of a bad name", create("pn", "..", "x"), storage.ErrInvalidName)

	if err := cr.PutNew(ctx, "pn", "failed", &failingReader{n: 10}, -1); err == nil {
		t.Fatal("create with a failing reader succeeded")
	}
	if err := cr.PutNew(ctx, "pn", "failed", strings.NewReader("abc"), 4); err == nil {
		t.Fatal("create of a body shorter than its size succeeded")
	}
	_, err = b.Stat(ctx, "pn", "failed")
	wantErr(t, "stat after failed creates", err, storage.ErrNotFound)
	if err := create("pn", "failed", "now"); err != nil {
		t.Fatalf("create after failed creates of the name: %v", err)
	}

	// Racing creates of one name: one wins, the others see ErrExists, the winner's bytes stay.
	const racers, size = 4, 64 << 10
	for round := range 8 {
		name := fmt.Sprintf("race%d", round)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = cr.PutNew(ctx, "pn/race", name, bytes.NewReader(fill(byte('A'+i), size)), size)
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: creates %d and %d both succeeded", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, storage.ErrExists):
				t.Fatalf("round %d: create %d: %v, want success or ErrExists", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no create succeeded: %v", round, errs)
		}
		rc, err := b.Get(ctx, "pn/race", name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, fill(byte('A'+winner), size)) {
			t.Fatalf("round %d: the stored object is not the winner's (%d bytes, error %v)", round, len(got), err)
		}
	}
}
