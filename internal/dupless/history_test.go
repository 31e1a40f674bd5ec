package dupless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// getAt reads one stored file as snapshot pin (0: newest) of a fresh client on be.
func getAt(t *testing.T, be storage.Backend, master []byte, pin func(c *Client) error, path string) ([]byte, error) {
	t.Helper()
	c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := pin(c); err != nil {
		return nil, err
	}
	out := filepath.Join(t.TempDir(), "out")
	sum, err := c.Get(ctx, path, out)
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

func version(n int, path string) func(c *Client) error {
	return func(c *Client) error { _, err := c.PinVersion(ctx, path, n); return err }
}

// A put that changes a file keeps the previous version: log lists both, and each reads
// back as it was, also after prune.
func TestVersionsOfAFile(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	dir := t.TempDir()
	v1 := randBytes(3<<20, 1)
	v2 := append(bytes.Clone(v1[:1<<20]), randBytes(2<<20, 2)...)
	write(t, filepath.Join(dir, "f"), v1)
	mustPut(t, c, dir+"/f", "")
	write(t, filepath.Join(dir, "f"), v2)
	os.Chtimes(filepath.Join(dir, "f"), time.Now(), time.Now().Add(time.Second))
	mustPut(t, c, dir+"/f", "")
	if _, err := c.Remove(ctx, "f", false); err != nil {
		t.Fatal(err)
	}
	vs, err := c.Log(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[0].N != 1 || vs[1].N != 2 || !vs[2].Deleted || vs[0].Size != int64(len(v1)) || vs[1].Size != int64(len(v2)) {
		t.Fatalf("log f = %+v", vs)
	}
	if pr, err := c.Prune(ctx, 0, false); err != nil || pr.ChunksRemoved != 0 || pr.VersionsRemoved != 0 {
		t.Fatalf("prune with every snapshot kept removed something: %+v %v", pr, err)
	}
	for i, want := range [][]byte{v1, v2} {
		got, err := getAt(t, be, master, version(i+1, "f"), "f")
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("version %d: %v, %d bytes (want %d)", i+1, err, len(got), len(want))
		}
	}
	// The newest view has no f; --at the time of version 1 has v1.
	if _, err := getAt(t, be, master, func(*Client) error { return nil }, "f"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get of the removed file: %v", err)
	}
	got, err := getAt(t, be, master, func(c *Client) error { _, err := c.PinTime(ctx, vs[1].Time.Add(-1)); return err }, "f")
	if err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("get --at before version 2: %v", err)
	}
	if _, err := c.PinVersion(ctx, "f", 3); err == nil || !strings.Contains(err.Error(), "has no version 3") {
		t.Fatalf("version 3: %v", err)
	}
}

// ls of a snapshot shows the folder as it was, and a pinned client changes nothing.
func TestListAtSnapshot(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "d", "a"), []byte("a"))
	mustPut(t, c, dir+"/d", "")
	snaps, err := c.Snapshots(ctx)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots: %+v %v", snaps, err)
	}
	if err := c.Move(ctx, "d/a", "d/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PinSnapshot(ctx, snaps[0].Seq); err != nil {
		t.Fatal(err)
	}
	es, err := c.List(ctx, "d", true)
	if err != nil || len(es) != 1 || es[0].Path != "d/a" || es[0].Size != 1 || es[0].Err != "" {
		t.Fatalf("ls d at snapshot 1: %+v %v", es, err)
	}
	if err := c.Mkdir(ctx, "x"); err == nil || !strings.Contains(err.Error(), "snapshot") {
		t.Fatalf("mkdir on a pinned client: %v", err)
	}
}

// forget drops snapshots by policy; prune then frees what only they referenced, and never
// what a retained snapshot references.
func TestForgetThenPrune(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	dir := t.TempDir()
	contents := [][]byte{randBytes(600<<10, 11), randBytes(600<<10, 12), randBytes(600<<10, 13)}
	for i, b := range contents {
		write(t, filepath.Join(dir, "f"), b)
		os.Chtimes(filepath.Join(dir, "f"), time.Now(), time.Unix(int64(1000+i), 0))
		mustPut(t, c, dir+"/f", "")
	}
	res, err := c.Forget(ctx, Policy{Last: 2}, true)
	if err != nil || len(res.Keep) != 2 || len(res.Remove) != 1 || res.Remove[0].Seq != 1 {
		t.Fatalf("forget --dry-run: %+v %v", res, err)
	}
	if snaps, _ := c.Snapshots(ctx); len(snaps) != 3 {
		t.Fatalf("dry run dropped snapshots: %d left", len(snaps))
	}
	if _, err := c.Forget(ctx, Policy{Last: 2}, false); err != nil {
		t.Fatal(err)
	}
	pr, err := c.Prune(ctx, 0, false)
	if err != nil || pr.ChunksRemoved != 1 || pr.VersionsRemoved != 1 || pr.Versions != 1 || pr.Snapshots != 2 {
		t.Fatalf("prune after forget: %+v %v", pr, err)
	}
	// Version 1 of what is left is the second content, and still reads.
	got, err := getAt(t, be, master, version(1, "f"), "f")
	if err != nil || !bytes.Equal(got, contents[1]) {
		t.Fatalf("oldest retained version after prune: %v", err)
	}
	if _, err := c.Forget(ctx, Policy{}, false); err == nil {
		t.Fatal("forget without a policy dropped snapshots")
	}
}

// A put that dies after keeping the old version but before writing the new record loses
// nothing: the snapshot still reads, and prune keeps its chunks.
func TestKeptVersionSurvivesACrashedPut(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	dir := t.TempDir()
	v1 := randBytes(700<<10, 21)
	write(t, filepath.Join(dir, "f"), v1)
	mustPut(t, c, dir+"/f", "")
	write(t, filepath.Join(dir, "f"), randBytes(700<<10, 22))
	os.Chtimes(filepath.Join(dir, "f"), time.Now(), time.Now().Add(time.Hour))
	fb := &failRecordPut{Backend: be}
	c2, _ := New(fb, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c2.Close()
	if sum, err := c2.Put(ctx, []string{dir + "/f"}, ""); err == nil && sum.Err() == nil {
		t.Fatal("put with failing record writes succeeded")
	}
	vd, vn := versionLocation(sha256.Sum256(mustRead(t, be, "f")))
	if _, err := be.Stat(ctx, vd, vn); err != nil {
		t.Fatalf("the version the put was replacing is not kept: %v", err)
	}
	if pr, err := c.Prune(ctx, 0, false); err != nil {
		t.Fatalf("prune: %+v %v", pr, err)
	}
	got, err := getAt(t, be, master, func(c *Client) error { _, err := c.PinSnapshot(ctx, 1); return err }, "f")
	if err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("snapshot 1 after a crashed put and prune: %v", err)
	}
}

// failRecordPut refuses every key record write (a crash right after the old version was
// kept).
type failRecordPut struct{ storage.Backend }

func (b *failRecordPut) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if strings.HasSuffix(name, keySuffix) {
		return storage.ErrPermission
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

func TestPolicyBuckets(t *testing.T) {
	day := func(d, h int) Snapshot {
		return Snapshot{Time: time.Date(2026, 1, d, h, 0, 0, 0, time.Local)}
	}
	snaps := []Snapshot{day(1, 9), day(1, 18), day(2, 9), day(3, 9), day(3, 10), day(3, 11)}
	got := Policy{Daily: 2}.keep(snaps)
	want := []bool{false, false, true, false, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("keep-daily 2 = %v, want %v", got, want)
		}
	}
	got = Policy{Last: 1, Within: 90 * time.Minute}.keep(snaps)
	want = []bool{false, false, false, false, true, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("keep-within 90m = %v, want %v", got, want)
		}
	}
}

func mustPut(t *testing.T, c *Client, local, dest string) {
	t.Helper()
	sum, err := c.Put(ctx, []string{local}, dest)
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// mustRead returns the bytes of the record object of the root-level file name.
func mustRead(t *testing.T, be storage.Backend, name string) []byte {
	t.Helper()
	infos, err := be.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if strings.HasSuffix(i.Name, keySuffix) {
			rc, err := be.Get(ctx, "", i.Name)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, _ := io.ReadAll(rc)
			return b
		}
	}
	t.Fatalf("no record for %s", name)
	return nil
}
