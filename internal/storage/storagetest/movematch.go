package storagetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// testMoveMatch: a conditional move (storage.MatchMover) moves a file only while its
// content hashes to the SHA-256 given; otherwise (other content, a directory) ErrChanged
// and nothing moves. The source is checked first (ErrNotFound), then the condition
// (ErrChanged), then the destination (ErrExists). Racing a put that replaces the source,
// what moves is the content matched, never the put's. Backends without it have nothing to
// check.
func testMoveMatch(t *testing.T, b storage.Backend) {
	mm, ok := b.(storage.MatchMover)
	if !ok {
		return
	}
	ctx := context.Background()
	sum := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	put(t, b, "mm", "f", []byte("v1"))
	if err := mm.MoveMatch(ctx, "mm", "f", "mm/kept", "g", sum("v1")); err != nil {
		t.Fatalf("a match that holds: %v", err)
	}
	if got := string(get(t, b, "mm/kept", "g")); got != "v1" {
		t.Fatalf("the moved file reads %q", got)
	}
	_, err := b.Stat(ctx, "mm", "f")
	wantErr(t, "stat of the moved source", err, storage.ErrNotFound)
	put(t, b, "mm", "empty", nil)
	if err := mm.MoveMatch(ctx, "mm", "empty", "mm", "empty2", sum("")); err != nil {
		t.Fatalf("a match of an empty file: %v", err)
	}

	put(t, b, "mm", "f", []byte("v2"))
	put(t, b, "mm", "taken", []byte("t"))
	put(t, b, "mm/dir", "inner", []byte("v1"))
	for _, c := range []struct {
		what        string
		srcDir, src string
		dstDir, dst string
		match       [32]byte
		want        error
	}{
		{"other content", "mm", "f", "mm", "new", sum("v1"), storage.ErrChanged},
		{"a directory", "mm", "dir", "mm", "new", sum(""), storage.ErrChanged},
		{"a directory, no hash (zeros)", "mm", "dir", "mm", "new", [32]byte{}, storage.ErrChanged},
		{"a missing source", "mm", "missing", "mm", "new", sum("v1"), storage.ErrNotFound},
		{"a missing source onto an existing name", "mm", "missing", "mm", "taken", sum("v1"), storage.ErrNotFound},
		{"other content onto an existing name (the condition before the destination)", "mm", "f", "mm", "taken", sum("v1"), storage.ErrChanged},
		{"a match onto an existing name", "mm", "f", "mm", "taken", sum("v2"), storage.ErrExists},
	} {
		wantErr(t, c.what, mm.MoveMatch(ctx, c.srcDir, c.src, c.dstDir, c.dst, c.match), c.want)
	}
	if got := string(get(t, b, "mm", "f")); got != "v2" {
		t.Fatalf("a refused move changed its source: %q", got)
	}
	if got := string(get(t, b, "mm", "taken")); got != "t" {
		t.Fatalf("a refused move changed its destination: %q", got)
	}
	if _, err := b.Stat(ctx, "mm", "new"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused move made its destination (stat: %v)", err)
	}
	if got := names(t, b, "mm/dir"); got != "inner" {
		t.Fatalf("a refused move of a directory changed it: %q", got)
	}

	// Raced with a put replacing the source, the move takes the old content or nothing.
	var wg sync.WaitGroup
	for i := range 16 {
		name := fmt.Sprintf("r%d", i)
		put(t, b, "mm/race", name, []byte("old"))
		var merr, perr error
		wg.Add(2)
		go func() { defer wg.Done(); merr = mm.MoveMatch(ctx, "mm/race", name, "mm/raced", name, sum("old")) }()
		go func() { defer wg.Done(); perr = b.Put(ctx, "mm/race", name, strings.NewReader("new"), 3) }()
		wg.Wait()
		if perr != nil {
			t.Fatal(perr)
		}
		switch {
		case merr == nil:
			if got := string(get(t, b, "mm/raced", name)); got != "old" {
				t.Fatalf("race %d: the conditional move moved %q", i, got)
			}
		case errors.Is(merr, storage.ErrChanged):
			if _, err := b.Stat(ctx, "mm/raced", name); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("race %d: a refused move made its destination (stat: %v)", i, err)
			}
		default:
			t.Fatalf("race %d: %v", i, merr)
		}
		if got := string(get(t, b, "mm/race", name)); got != "new" {
			t.Fatalf("race %d: the put's object reads %q", i, got)
		}
	}
}
