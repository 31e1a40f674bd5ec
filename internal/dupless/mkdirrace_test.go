package dupless

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storeserver/storetest"
	"github.com/veil-project/veil/internal/testutil"
)

// hookedNS is a user's namespace of the real storage service (in process) that runs
// onBatch before each batch a client sends.
type hookedNS struct {
	*storeserver.Namespace
	onBatch func([]storage.Object)
}

func (h *hookedNS) PutBatch(ctx context.Context, objs []storage.Object) error {
	if h.onBatch != nil {
		h.onBatch(objs)
	}
	return h.Namespace.PutBatch(ctx, objs)
}

// A mkdir and a put of one new folder at once, on the storage service: whichever writes
// the folder's record second, the folder ends with one record, the put's from disk when
// it put the folder (the mkdir's when the put only made it as a destination), every root
// lists what is stored, and check finds nothing. Found in session 17: a mkdir whose
// record write came after the put's wrote over it (the folder put as drwx------ of 2020
// became drwxr-xr-x dated the mkdir), as TestMkdirKeepsAFoldersRecord forbids when the
// put finished first.
func TestMkdirAndPutOfOneFolderAtOnce(t *testing.T) {
	d := filepath.Join(t.TempDir(), "new")
	write(t, filepath.Join(d, "f"), []byte("f"))
	then := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(d, then, then); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "g")
	write(t, f, []byte("g"))
	fromDisk := func(e Entry) bool { return e.Mode == fs.ModeDir|0o700 && e.ModTime.Equal(then) }
	implicit := func(e Entry) bool { return e.Mode == fs.ModeDir|0o755 && !e.ModTime.Equal(then) }
	for _, tc := range []struct {
		name     string
		mkdirIn  bool                      // mkdir runs within the put's write of the folder's record, not the put within mkdir's
		put      func(*testing.T, *Client) // stores into the folder new
		want     func(Entry) bool          // new's record
		versions int                       // records kept as versions (the one written over)
	}{
		{"put's folder within mkdir's write", false, func(t *testing.T, c *Client) { mustPut(t, c, d, "") }, fromDisk, 0},
		{"mkdir within put's folder write", true, func(t *testing.T, c *Client) { mustPut(t, c, d, "") }, fromDisk, 1},
		{"put into it within mkdir's write", false, func(t *testing.T, c *Client) { mustPut(t, c, f, "new") }, implicit, 0},
		{"mkdir within put into it", true, func(t *testing.T, c *Client) { mustPut(t, c, f, "new") }, implicit, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := storetest.Open(t, storetest.Options{})
			ns, err := s.Namespace("alice")
			if err != nil {
				t.Fatal(err)
			}
			h := &hookedNS{Namespace: ns}
			dev := devices(t, h)
			if err := dev().Mkdir(ctx, "other"); err != nil { // the namespace has a root
				t.Fatal(err)
			}
			mk, put := dev(), dev()
			first, second := func() { tc.put(t, put) }, func() {
				if err := mk.Mkdir(ctx, "new"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.mkdirIn {
				first, second = second, first
			}
			var armed atomic.Bool
			armed.Store(true)
			h.onBatch = func(objs []storage.Object) {
				for _, o := range objs {
					if o.Name == dirMetaName && o.Dir != "" && armed.Swap(false) {
						first() // the other command writes the record first
						return
					}
				}
			}
			second()
			if armed.Load() {
				t.Fatal("no folder record was written")
			}
			r := dev()
			es, err := r.List(ctx, "", true)
			if err != nil {
				t.Fatal(err)
			}
			var got *Entry
			for i := range es {
				if es[i].Path == "new" {
					got = &es[i]
				}
			}
			if got == nil || !tc.want(*got) {
				t.Errorf("new after the mkdir and the put: %+v", got)
			}
			root, err := r.latestRoot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for p, h := range root.Entries {
				dir, name := storage.Split(p)
				if sha256.Sum256(testutil.GetObject(t, ns, dir, name)) != h {
					t.Errorf("root %d lists %s, not as stored", root.Seq, r.describe(p))
				}
			}
			res, err := r.Check(ctx, CheckOptions{})
			if err != nil || len(res.Problems) != 0 || res.Versions != tc.versions {
				t.Errorf("check: %d versions, problems %v, %v; want %d versions, no problem", res.Versions, res.Problems, err, tc.versions)
			}
		})
	}
}
