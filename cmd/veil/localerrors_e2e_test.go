package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// With a local storage folder, a command's error names the object once, by its key, and
// the cause: the local backend repeated the key as an absolute path ("get .veil/chunks/
// 7e/7ec4...: not found (open /store/.veil/chunks/7e/7ec4...: no such file or
// directory)"). Found by the notes since session 13.
func TestE2ELocalStorageErrorsNameTheObjectOnce(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "g.txt"), 2000, 1)
	u.mustRun(t, "put", src)

	// A missing object: the chunk of docs/g.txt.
	chunks, _ := filepath.Glob(filepath.Join(store, ".veil", "chunks", "*", "*"))
	if len(chunks) != 1 {
		t.Fatalf("chunks: %v", chunks)
	}
	os.Remove(chunks[0])
	key := filepath.Base(chunks[0])
	_, errs, code := u.run(t, "cat", "docs/g.txt")
	if code != 1 || strings.Count(errs, "\n") != 1 || strings.Count(errs, key) != 1 || strings.Contains(errs, store) ||
		!strings.HasSuffix(errs, key+": not found\n") {
		t.Errorf("cat of a file whose chunk is missing: exit %d, stderr %q", code, errs)
	}

	// A permission error: the stored folder refuses new entries.
	dirs, _ := filepath.Glob(filepath.Join(store, "[^.]*"))
	if len(dirs) != 1 {
		t.Fatalf("stored folders: %v", dirs)
	}
	testutil.DenyWrites(t, dirs[0])
	randomFile(t, filepath.Join(src, "new.txt"), 100, 2)
	enc := filepath.Base(dirs[0])
	_, errs, code = u.run(t, "put", filepath.Join(src, "new.txt"), "--to", "docs")
	first, _, _ := strings.Cut(errs, "\n")
	if code != 3 || !strings.HasPrefix(first, "veil: "+filepath.Join(src, "new.txt")+": put "+enc+"/") ||
		!strings.HasSuffix(first, ".key: permission denied"+causeOfDenial()) || strings.Count(first, enc) != 1 || strings.Contains(errs, store) {
		t.Errorf("put into a folder that refuses writes: exit %d, stderr %q", code, errs)
	}
	_, errs, code = u.run(t, "rm", "docs/g.txt")
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "veil: docs/g.txt: move "+enc+"/") ||
		!strings.HasSuffix(errs, ": permission denied"+causeOfDenial()+"\n") || strings.Count(errs, enc) != 1 || strings.Contains(errs, store) {
		t.Errorf("rm in a folder that refuses writes: exit %d, stderr %q", code, errs)
	}
}

// causeOfDenial is what a permission error adds to "permission denied": nothing for
// EACCES (a mode), the file system's words for root's EPERM (an immutable folder).
func causeOfDenial() string {
	if os.Geteuid() == 0 {
		return " (operation not permitted)"
	}
	return ""
}
