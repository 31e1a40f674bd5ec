package local_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// Two openers of one directory (two veil processes: a device's put and another's rm on a
// shared folder) exclude each other through the lock file: of two creates of one name
// exactly one wins, and a conditional move racing the other opener's Put moves the
// content it matched or nothing. New leaves the lock file alone.
func TestConditionsAcrossOpeners(t *testing.T) {
	dir, a, b := twoOpeners(t)
	ctx := context.Background()
	old := sha256.Sum256([]byte("old"))
	for i := range 20 {
		name := fmt.Sprintf("n%d", i)
		var errs [2]error
		var wg sync.WaitGroup
		for j, be := range []*local.Backend{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j] = be.PutBatch(ctx, []storage.Object{{Dir: "c", Name: name, Data: []byte{byte(j)}, Create: true}})
			}()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("two creates of %s from two openers: %v and %v", name, errs[0], errs[1])
		}
		if err := a.Put(ctx, "m", name, bytes.NewReader([]byte("old")), 3); err != nil {
			t.Fatal(err)
		}
		var merr, perr error
		wg.Add(2)
		go func() { defer wg.Done(); merr = a.MoveMatch(ctx, "m", name, "kept", name, old) }()
		go func() { defer wg.Done(); perr = b.Put(ctx, "m", name, bytes.NewReader([]byte("new")), 3) }()
		wg.Wait()
		if perr != nil {
			t.Fatal(perr)
		}
		if merr == nil {
			if got, _ := os.ReadFile(filepath.Join(dir, "kept", name)); string(got) != "old" {
				t.Fatalf("race %d: the conditional move moved %q", i, got)
			}
		} else if !errors.Is(merr, storage.ErrChanged) {
			t.Fatalf("race %d: %v", i, merr)
		}
	}
	if _, err := local.New(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, local.TempDirName, "lock")); err != nil {
		t.Fatalf("the lock file after New: %v", err)
	}
}

// twoOpeners opens one new directory store dir twice, as two veil processes do.
func twoOpeners(t *testing.T) (dir string, a, b *local.Backend) {
	t.Helper()
	dir = t.TempDir()
	var err error
	if a, err = local.New(dir); err != nil {
		t.Fatal(err)
	}
	if b, err = local.New(dir); err != nil {
		t.Fatal(err)
	}
	return dir, a, b
}
