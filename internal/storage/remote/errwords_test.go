package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// The service's refusals name the operation and object once: its message begins with the
// words the client puts before it ("put d: store: put d: is a directory" before).
func TestServiceErrorsNameTheObjectOnce(t *testing.T) {
	b := storeClient(t)
	ctx := context.Background()
	if err := b.Put(ctx, "d", "f", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	_, getErr := b.Get(ctx, "d", "nope")
	_, statErr := b.Stat(ctx, "d", "nope")
	for _, c := range []struct {
		err  error
		want string
		is   error
	}{
		{b.Put(ctx, "", "d", strings.NewReader("x"), 1), "put d: store: is a directory", storage.ErrIsDir},
		{getErr, "get d/nope: store: not found", storage.ErrNotFound},
		{statErr, "stat d/nope: store: not found", storage.ErrNotFound},
		{b.Delete(ctx, "d", "nope"), "delete d/nope: store: not found", storage.ErrNotFound},
		{b.Move(ctx, "d", "nope", "e", "x"), "move d/nope to e/x: store: not found", storage.ErrNotFound},
	} {
		if c.err == nil || c.err.Error() != c.want || !errors.Is(c.err, c.is) {
			t.Errorf("got %v, want %q (wrapping %v)", c.err, c.want, c.is)
		}
	}
}
