package dupless

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// touchKeys derives keys as LocalKeys does, running touch before its first derivation:
// between a put's open of its file and the end of its read.
type touchKeys struct {
	once  sync.Once
	touch func()
}

func (k *touchKeys) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	k.once.Do(k.touch)
	return mle.LocalKeys{}.DeriveKeys(ctx, ds)
}

// A file that changes while put reads it is stored as read, with a warning naming it and a
// count in the summary (as tar's "file changed as we read it"), and the next put stores it
// again. Found by a user walkthrough: nothing said so.
func TestPutWarnsFileChangedWhileRead(t *testing.T) {
	be := newBackend(t)
	src := filepath.Join(t.TempDir(), "src")
	f := filepath.Join(src, "growing.log")
	write(t, f, randBytes(2<<20, 1))
	logs := &logBuf{}
	master := NewMasterKey()
	kd := &touchKeys{touch: func() {
		a, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		a.Write([]byte("a line written during the put\n"))
		a.Close()
	}}
	c, err := New(be, master, Options{Keys: kd, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Put(ctx, []string{src}, "")
	c.Close()
	if err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	if sum.ChangedWhileRead != 1 {
		t.Fatalf("changed while read: %d, want 1", sum.ChangedWhileRead)
	}
	if l := logs.take(); !strings.Contains(l, "file changed while it was read") || !strings.Contains(l, "growing.log") {
		t.Fatalf("no warning naming the file: %q", l)
	}

	c2, err := New(be, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	sum2, err := c2.Put(ctx, []string{src}, "")
	if err != nil || sum2.Err() != nil {
		t.Fatal(err, sum2.Err())
	}
	if sum2.Unchanged != 0 || sum2.ChangedWhileRead != 0 {
		t.Fatalf("next put: %d unchanged, %d changed while read; want the file stored again", sum2.Unchanged, sum2.ChangedWhileRead)
	}
	out := filepath.Join(t.TempDir(), "back")
	if _, err := c2.Get(ctx, "src/growing.log", out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(f)
	if !bytes.Equal(got, want) {
		t.Fatal("the next put did not store the file as it now is")
	}
}
