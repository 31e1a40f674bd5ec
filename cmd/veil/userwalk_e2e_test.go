package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Faults found by session 16's user walkthrough (a new user comparing veil with restic,
// age and rclone), each pinned end to end on the built binary.

// holdLock plants the lock of a command another host runs (exclusive, fresh) on the local
// storage directory store, as a prune running elsewhere holds it.
func holdLock(t *testing.T, store string) {
	t.Helper()
	dir := filepath.Join(store, ".veil", "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("exclusive-%d-0011223344556677-8899aabbccddeeff-1", time.Now().Unix())
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A sync that cannot take its lock did nothing: one line and exit 1, as put and rm say it,
// not "stored 0 files, ..." and exit 3 ("some items failed, the rest went through").
func TestE2ESyncLockedFailsAsAWhole(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	u.run(t, "put", "-q", src)
	holdLock(t, store)
	for _, json := range []bool{false, true} {
		args := []string{"sync", src}
		if json {
			args = append(args, "--json")
		}
		out, errs, code := u.run(t, args...)
		want := "veil: another veil command holds a conflicting lock"
		if code != 1 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Fatalf("veil %v: exit %d, stderr %q; want exit 1 and one line %q...", args, code, errs, want)
		}
		if !json && out != "" {
			t.Fatalf("veil %v printed %q; want no summary of a sync that did nothing", args, out)
		}
		if json && (strings.Count(out, "\n") != 1 || !strings.Contains(out, `"exit_code":1}`)) {
			t.Fatalf("veil %v printed %q; want only the error object, exit_code 1", args, out)
		}
	}
}
