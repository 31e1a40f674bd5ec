package dupless

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// A socket holds no data: put skips it, counted by kind in the summary (and its JSON), not
// as a failure, so sync completes and removes what is gone; diff --local does not list it.
// FIFOs and devices are stored as before. Found by review: put failed the socket, and a
// sync (which removes nothing when a file failed) never removed anything.
func TestPutSkipsSockets(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "gone"), []byte("deleted locally later"))
	l, err := net.Listen("unix", filepath.Join(src, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	devices := 0
	if err := syscall.Mknod(filepath.Join(src, "null"), syscall.S_IFCHR|0o644, 1<<8|3); err == nil {
		devices = 1 // as root: /dev/null's numbers
	} else if !errors.Is(err, fs.ErrPermission) {
		t.Fatal(err)
	}
	sum, err := c.Put(ctx, []string{src}, "")
	if err != nil || sum.Err() != nil {
		t.Fatalf("put with a socket: %v %v", err, sum.Err())
	}
	if sum.NotStored["socket"] != 1 || len(sum.NotStored) != 1 || sum.Special != 1+devices || sum.Files != 2 {
		t.Fatalf("put: not stored %v, %d special, %d files", sum.NotStored, sum.Special, sum.Files)
	}
	if b, _ := json.Marshal(sum); !strings.Contains(string(b), `"not_stored":{"socket":1}`) {
		t.Fatalf("put --json: %s", b)
	}
	if es, err := c.List(ctx, "d/sock", false); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ls d/sock: %v %v", es, err)
	}
	if es, err := c.List(ctx, "d/pipe", true); err != nil || len(es) != 1 || es[0].Mode.Type() != fs.ModeNamedPipe {
		t.Fatalf("ls d/pipe: %+v %v", es, err)
	}
	if es, err := c.List(ctx, "d/null", true); devices == 1 && (err != nil || len(es) != 1 || es[0].Mode.Type() != fs.ModeDevice|fs.ModeCharDevice) {
		t.Fatalf("ls d/null: %+v %v", es, err)
	}
	if chs, err := c.DiffLocal(ctx, src, "d"); err != nil || len(chs) != 0 {
		t.Fatalf("diff --local = %v %v; want no change (the socket is not stored, nor missing)", changeList(chs), err)
	}
	os.Remove(filepath.Join(src, "gone"))
	res, err := c.Sync(ctx, src, "", false)
	if err != nil || res.Removed != 1 || res.Put.NotStored["socket"] != 1 {
		t.Fatalf("sync with a socket: %+v %v; want d/gone removed", res, err)
	}
	if es, err := c.List(ctx, "d/gone", false); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ls d/gone after sync: %v %v", es, err)
	}
	// Put of the socket itself: nothing to store, nothing failed.
	if sum, err := c.Put(ctx, []string{filepath.Join(src, "sock")}, ""); err != nil || sum.Err() != nil || sum.NotStored["socket"] != 1 {
		t.Fatalf("put of a socket: %+v %v", sum, err)
	}
}
