package local_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/testutil"
)

// An error names the object once, by its key, with the cause: the file system's own
// wording ("open /store/a/b: no such file or directory") repeated the key as an absolute
// path. A folder the backend could not make is named below the root. Found by the notes
// since session 13 ("put a/b: open /x/a/b: ...").
func TestErrorsNameTheObjectOnce(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	put := func(dir, name string) error {
		return b.Put(ctx, dir, name, bytes.NewReader([]byte("x")), 1)
	}
	if err := put("a", "b"); err != nil {
		t.Fatal(err)
	}
	_, getErr := b.Get(ctx, "a", "missing")
	_, statErr := b.Stat(ctx, "a", "missing")
	_, listErr := b.List(ctx, "nope")
	testutil.DenyWrites(t, filepath.Join(root, "a"))
	for _, c := range []struct {
		err   error
		want  string
		class error
	}{
		{getErr, "get a/missing: not found", storage.ErrNotFound},
		{statErr, "stat a/missing: not found", storage.ErrNotFound},
		{listErr, "list nope: not found", storage.ErrNotFound},
		{b.Delete(ctx, "a", "missing"), "delete a/missing: not found", storage.ErrNotFound},
		{put("a", "c"), "put a/c: permission denied", storage.ErrPermission},
		{put("a/d", "e"), "put a/d/e: permission denied (mkdir a/d: ", storage.ErrPermission},
		{b.Delete(ctx, "a", "b"), "delete a/b: permission denied", storage.ErrPermission},
		{b.Move(ctx, "a", "b", "", "moved"), "move a/b to moved: permission denied", storage.ErrPermission},
		{b.MoveMatch(ctx, "a", "missing", "", "moved", [32]byte{}), "move a/missing to moved: not found", storage.ErrNotFound},
		{b.PutBatch(ctx, []storage.Object{{Dir: "a", Name: "f", Data: []byte("x")}}), "put a/f: permission denied", storage.ErrPermission},
		{b.PutBatch(ctx, []storage.Object{{Dir: "a", Name: "b", Data: []byte("y"), Create: true}}), "batch object 0 (a/b): already exists", storage.ErrExists},
	} {
		if c.err == nil {
			t.Errorf("want %q, got no error", c.want)
			continue
		}
		msg := c.err.Error()
		if !strings.HasPrefix(msg, c.want) || strings.Contains(msg, root) || strings.Contains(msg, "\n") || !errors.Is(c.err, c.class) {
			t.Errorf("got %q, want %q... (one line, no %s, %v)", msg, c.want, root, c.class)
		}
		if strings.Contains(msg, "permission denied (permission denied)") {
			t.Errorf("%q says its cause twice", msg)
		}
	}
}
