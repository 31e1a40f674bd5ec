package dupless

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// Errors about an entry whose name cannot be decrypted (a long name whose name object is
// gone, an object another user or tool left in the folder) name the user's folder, not its
// encrypted path; the object an operator looks for is beside it (found by the session 12
// walkthrough: "rKga.../~ctg....key: ~ctg...: the name object ...").
func TestErrorsNameTheUsersFolder(t *testing.T) {
	setup := func(t *testing.T) (*Client, []byte, string, string) {
		be := newBackend(t)
		master := NewMasterKey()
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		local := t.TempDir()
		long := strings.Repeat("n", 200)
		write(t, filepath.Join(local, "docs", long), []byte("L"))
		write(t, filepath.Join(local, "docs", "sub", "a.txt"), []byte("A"))
		mustPut(t, c, filepath.Join(local, "docs"), "")
		encDir, err := c.keys.encPath("docs")
		if err != nil {
			t.Fatal(err)
		}
		return c, master, encDir, c.keys.longTag(long)
	}
	ops := func(t *testing.T, c *Client) map[string]error {
		_, check := c.Check(ctx, CheckOptions{})
		_, get := c.Get(ctx, "docs", filepath.Join(t.TempDir(), "out"))
		_, rm := c.Remove(ctx, "docs", true)
		_, prune := c.Prune(ctx, 0, true)
		return map[string]error{"check": check, "get": get, "rm -r": rm, "mv": c.Move(ctx, "docs", "moved"), "prune": prune}
	}
	t.Run("long name object missing", func(t *testing.T) {
		c, master, encDir, tag := setup(t)
		if err := c.be.Delete(ctx, namesDir, tag); err != nil {
			t.Fatal(err)
		}
		for op, err := range ops(t, freshClient(t, c, master)) {
			if err == nil || !strings.HasPrefix(err.Error(), "docs: an entry's name cannot be read: ") ||
				strings.Contains(err.Error(), encDir) || !strings.Contains(err.Error(), "("+namesDir+"/"+tag+")") {
				t.Errorf("%s: %v", op, err)
			}
		}
	})
	t.Run("foreign entry", func(t *testing.T) {
		c, master, encDir, _ := setup(t)
		if err := c.be.Put(ctx, storage.Join(encDir, "notmine"), dirMetaName, bytesReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
		for op, err := range ops(t, freshClient(t, c, master)) {
			if op == "check" || op == "get" {
				if err != nil { // they skip it with a warning
					t.Errorf("%s: %v", op, err)
				}
				continue
			}
			if err == nil || !strings.HasPrefix(err.Error(), "docs: an entry (stored object "+encDir+"/notmine): not encrypted under this key") {
				t.Errorf("%s: %v", op, err)
			}
		}
	})
}

// A per-file error whose message names its path already says it once.
func TestFileErrorSaysThePathOnce(t *testing.T) {
	for _, tc := range []struct {
		e    FileError
		want string
	}{
		{FileError{"docs", "docs: deleted: x"}, "docs: deleted: x"},
		{FileError{"docs", "deleted: x"}, "docs: deleted: x"},
		{FileError{"docs", "docsy: x"}, "docs: docsy: x"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

// failListBE fails every listing of one folder, as a storage service that answers 503.
type failListBE struct {
	storage.Backend
	dir string
}

func (b *failListBE) List(ctx context.Context, dir string) ([]storage.Info, error) {
	if dir == b.dir {
		return nil, errors.New("list: HTTP 503 Service Unavailable")
	}
	return b.Backend.List(ctx, dir)
}

// A folder that cannot be listed is named as the user knows it, before the service's
// answer.
func TestListFailureNamesTheUsersFolder(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c := clientWith(t, be, master, nil)
	local := t.TempDir()
	write(t, filepath.Join(local, "docs", "sub", "a.txt"), []byte("A"))
	mustPut(t, c, filepath.Join(local, "docs"), "")
	encSub, err := c.keys.encPath("docs/sub")
	if err != nil {
		t.Fatal(err)
	}
	r := clientWith(t, &failListBE{be, encSub}, master, nil)
	_, list := r.List(ctx, "docs/sub", false)
	_, get := r.Get(ctx, "docs", filepath.Join(t.TempDir(), "out"))
	_, rm := r.Remove(ctx, "docs", true)
	for op, err := range map[string]error{"ls": list, "get": get, "rm -r": rm} {
		if err == nil || !strings.HasPrefix(err.Error(), "docs/sub: ") || !strings.Contains(err.Error(), "HTTP 503") {
			t.Errorf("%s: %v", op, err)
		}
	}
}
