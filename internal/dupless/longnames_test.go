package dupless

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

func freshClient(t *testing.T, c *Client, master []byte) *Client {
	t.Helper()
	n, err := New(c.be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// Names up to 255 bytes (longer than MaxNameLen, so stored under a tag) round-trip through
// put, ls, get, find, mv, check, log and snapshots, read by a client that has never seen
// them (it loads the name objects).
func TestLongNames(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	dirName := strings.Repeat("d", 255)
	fileName := strings.Repeat("é", 127) + "f" // 255 bytes
	local := filepath.Join(t.TempDir(), dirName)
	write(t, filepath.Join(local, fileName), []byte("long"))
	if err := os.Symlink(fileName, filepath.Join(local, strings.Repeat("l", 255))); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, local, "")
	r := freshClient(t, c, master)
	es, err := r.List(ctx, dirName, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Path != dirName+"/"+strings.Repeat("l", 255) || es[0].Symlink != fileName || es[1].Path != dirName+"/"+fileName {
		t.Fatalf("ls: %+v", es)
	}
	if got, err := getAt(t, be, master, func(*Client) error { return nil }, dirName+"/"+fileName); err != nil || string(got) != "long" {
		t.Fatalf("get: %q %v", got, err)
	}
	if ps, err := freshClient(t, c, master).Find(ctx, fileName); err != nil || len(ps) != 1 || ps[0] != dirName+"/"+fileName {
		t.Fatalf("find: %q %v", ps, err)
	}
	other := strings.Repeat("o", 200)
	if err := freshClient(t, c, master).Move(ctx, dirName+"/"+fileName, other); err != nil {
		t.Fatal(err)
	}
	if got, err := getAt(t, be, master, func(*Client) error { return nil }, other); err != nil || string(got) != "long" {
		t.Fatalf("get after mv: %q %v", got, err)
	}
	res, err := freshClient(t, c, master).Check(ctx, CheckOptions{ReadData: true})
	if err != nil || len(res.Problems) != 0 || res.Files != 2 {
		t.Fatalf("check: %+v %v", res, err)
	}
	if _, err := freshClient(t, c, master).Remove(ctx, other, false); err != nil {
		t.Fatal(err)
	}
	vs, err := freshClient(t, c, master).Log(ctx, dirName+"/"+fileName)
	if err != nil || len(vs) != 2 || !vs[1].Deleted {
		t.Fatalf("log: %+v %v", vs, err)
	}
	if got, err := getAt(t, be, master, version(1, dirName+"/"+fileName), dirName+"/"+fileName); err != nil || string(got) != "long" {
		t.Fatalf("get of version 1: %q %v", got, err)
	}
	if _, err := c.keys.encName(strings.Repeat("x", 256)); !errors.Is(err, ErrNameTooLong) {
		t.Fatalf("256-byte name: %v", err)
	}
}

// A name object that is missing, altered, or another long name's is detected: ls shows the
// entry with the error, get -r and check stop with it; get by name still works (its tag
// is computed from the name, not read).
func TestLongNameObjectTampered(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	a, b := strings.Repeat("a", 200), strings.Repeat("b", 200)
	local := t.TempDir()
	write(t, filepath.Join(local, "d", a), []byte("A"))
	write(t, filepath.Join(local, "d", b), []byte("B"))
	mustPut(t, c, filepath.Join(local, "d"), "")
	ta, tb := c.keys.longTag(a), c.keys.longTag(b)
	objA, err := c.getObject(ctx, namesDir, ta)
	if err != nil {
		t.Fatal(err)
	}
	objB, _ := c.getObject(ctx, namesDir, tb)
	flipped := append([]byte(nil), objA...)
	flipped[len(flipped)-1] ^= 1
	for _, tc := range []struct {
		name string
		obj  []byte // nil: deleted
	}{{"swapped", objB}, {"altered", flipped}, {"version", append([]byte{2}, objA[1:]...)}, {"deleted", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.obj == nil {
				if err := be.Delete(ctx, namesDir, ta); err != nil {
					t.Fatal(err)
				}
			} else if err := be.Put(ctx, namesDir, ta, bytesReader(tc.obj), int64(len(tc.obj))); err != nil {
				t.Fatal(err)
			}
			r := freshClient(t, c, master)
			es, err := r.List(ctx, "d", false)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for _, e := range es {
				if e.Err != "" {
					bad++
					if !strings.Contains(e.Err, ErrLongNameMissing.Error()) || e.Path != "d/"+ta {
						t.Errorf("entry %q: %s", e.Path, e.Err)
					}
				} else if e.Path != "d/"+b {
					t.Errorf("unexpected entry %q", e.Path)
				}
			}
			if bad != 1 {
				t.Fatalf("ls: %+v", es)
			}
			if _, err := freshClient(t, c, master).Check(ctx, CheckOptions{}); !errors.Is(err, ErrLongNameMissing) {
				t.Fatalf("check: %v", err)
			}
			if _, err := freshClient(t, c, master).Get(ctx, "d", filepath.Join(t.TempDir(), "out")); !errors.Is(err, ErrLongNameMissing) {
				t.Fatalf("get -r: %v", err)
			}
			if got, err := getAt(t, be, master, func(*Client) error { return nil }, "d/"+a); err != nil || string(got) != "A" {
				t.Fatalf("get by name: %q %v", got, err)
			}
		})
	}
}

// A long-named file's record moved under another long name's tag does not open there: the
// record is bound to its storage path, which holds the tag.
func TestLongNameRecordRenamed(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	a, b := strings.Repeat("a", 200), strings.Repeat("b", 200)
	local := t.TempDir()
	write(t, filepath.Join(local, "d", a), []byte("A"))
	write(t, filepath.Join(local, "d", b), []byte("B"))
	mustPut(t, c, filepath.Join(local, "d"), "")
	encD, _ := c.keys.encName("d")
	src := filepath.Join(be.Root(), encD, c.keys.longTag(a)+keySuffix)
	dst := filepath.Join(be.Root(), encD, c.keys.longTag(b)+keySuffix)
	if err := os.Rename(src, dst); err != nil {
		t.Fatal(err)
	}
	if got, err := getAt(t, be, master, func(*Client) error { return nil }, "d/"+b); !errors.Is(err, ErrRecord) {
		t.Fatalf("get of the renamed record: %q %v, want ErrRecord", got, err)
	}
}

// sync and diff see long names as names: a second sync of an unchanged folder changes
// nothing, and a long-named file deleted locally is removed by the next sync.
func TestLongNamesSync(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	local := filepath.Join(t.TempDir(), strings.Repeat("s", 255))
	long := strings.Repeat("é", 127) + "f"
	write(t, filepath.Join(local, long), []byte("x"))
	write(t, filepath.Join(local, strings.Repeat("k", 255)), []byte("y"))
	if _, err := c.Sync(ctx, local, "", false); err != nil {
		t.Fatal(err)
	}
	r := freshClient(t, c, master)
	if res, err := r.Sync(ctx, local, "", false); err != nil || len(res.Changes) != 0 || res.Removed != 0 {
		t.Fatalf("second sync: %+v %v", res, err)
	}
	os.Remove(filepath.Join(local, long))
	res, err := freshClient(t, c, master).Sync(ctx, local, "", false)
	// Two changes: the file removed, and its folder's new modification time.
	if err != nil || res.Removed != 1 || len(res.Changes) != 2 || res.Changes[0].Kind != "metadata" || !strings.HasSuffix(res.Changes[1].Path, long) {
		t.Fatalf("sync after a local delete: %+v %v", res, err)
	}
}
