package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// Factory returns a fresh, empty backend for one test case; cleanup is the factory's
// business (t.Cleanup).
type Factory func(t *testing.T) storage.Backend

// Run checks the storage.Backend contract against backends made by factory.
func Run(t *testing.T, factory Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b storage.Backend)
	}{
		{"RoundTrip", testRoundTrip},
		{"Large", testLarge},
		{"Overwrite", testOverwrite},
		{"Names", testNames},
		{"InvalidNames", testInvalidNames},
		{"ListStat", testListStat},
		{"NotFound", testNotFound},
		{"Create", testCreate},
		{"Delete", testDelete},
		{"Search", testSearch},
		{"MoveFile", testMoveFile},
		{"MoveDir", testMoveDir},
		{"MoveMatch", testMoveMatch},
		{"PutNew", testPutNew},
		{"ConcurrentWriters", testConcurrentWriters},
		{"FailingReader", testFailingReader},
		{"Batch", testBatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, factory(t)) })
	}
}

func put(t *testing.T, b storage.Backend, dir, name string, data []byte) {
	t.Helper()
	if err := b.Put(context.Background(), dir, name, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("put %q/%q: %v", dir, name, err)
	}
}

func get(t *testing.T, b storage.Backend, dir, name string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), dir, name)
	if err != nil {
		t.Fatalf("get %q/%q: %v", dir, name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("get %q/%q: read: %v", dir, name, err)
	}
	return data
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// names lists the entries of dir as "name" or "name/" for directories.
func names(t *testing.T, b storage.Backend, dir string) string {
	t.Helper()
	infos, err := b.List(context.Background(), dir)
	if err != nil {
		t.Fatalf("list %q: %v", dir, err)
	}
	var s []string
	for _, i := range infos {
		if i.Dir != dir {
			t.Errorf("list %q: entry %q has Dir %q", dir, i.Name, i.Dir)
		}
		if i.IsDir {
			s = append(s, i.Name+"/")
		} else {
			s = append(s, i.Name)
		}
	}
	return strings.Join(s, ",")
}

func testRoundTrip(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	for _, n := range []int64{0, 1, 5 << 20} {
		for _, known := range []bool{true, false} {
			name := fmt.Sprintf("obj-%d-%v", n, known)
			size := n
			if !known {
				size = -1
			}
			if err := b.Put(ctx, "rt", name, pattern(uint64(n), n), size); err != nil {
				t.Fatalf("put %d bytes (size %d): %v", n, size, err)
			}
			want, _ := digest(t, pattern(uint64(n), n))
			rc, err := b.Get(ctx, "rt", name)
			if err != nil {
				t.Fatalf("get %s: %v", name, err)
			}
			got, m := digest(t, rc)
			rc.Close()
			if got != want || m != n {
				t.Fatalf("%s: got %d bytes (hash %x), want %d (hash %x)", name, m, got[:4], n, want[:4])
			}
			info, err := b.Stat(ctx, "rt", name)
			if err != nil || info.Size != n || info.IsDir || info.Name != name || info.Dir != "rt" {
				t.Fatalf("stat %s: %+v, %v", name, info, err)
			}
		}
	}
}

// testLarge streams 100 MiB of unknown length in and out; neither side holds it in memory.
func testLarge(t *testing.T, b storage.Backend) {
	if testing.Short() {
		t.Skip("100 MiB round trip skipped in -short mode")
	}
	const n = 100 << 20
	ctx := context.Background()
	if err := b.Put(ctx, "big", "100MiB", pattern(100, n), -1); err != nil {
		t.Fatalf("put: %v", err)
	}
	rc, err := b.Get(ctx, "big", "100MiB")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, m := digest(t, rc)
	want, _ := digest(t, pattern(100, n))
	if got != want || m != n {
		t.Fatalf("got %d bytes, want %d; hashes equal: %v", m, n, got == want)
	}
}

func testOverwrite(t *testing.T, b storage.Backend) {
	put(t, b, "", "f", []byte("first version, longer"))
	put(t, b, "", "f", []byte("second"))
	if got := get(t, b, "", "f"); string(got) != "second" {
		t.Fatalf("got %q after overwrite", got)
	}
	if got := names(t, b, ""); got != "f" {
		t.Fatalf("root lists %q, want only f", got)
	}
}

func testNames(t *testing.T, b storage.Backend) {
	weird := []string{"with space", "ünïcødé 名前", "a%2Fb", "q?x=1&y#frag", "plus+tilde~", "-dash", ".hidden",
		"back\\slash", "tab\tnew\nline", "emoji 🔒", strings.Repeat("n", storage.MaxNameLen)}
	for i, n := range weird {
		dir := "dir with space/" + n
		data := []byte(fmt.Sprintf("content %d", i))
		put(t, b, dir, n, data)
		if got := get(t, b, dir, n); !bytes.Equal(got, data) {
			t.Fatalf("name %q: got %q", n, got)
		}
		if got := names(t, b, dir); got != n {
			t.Fatalf("list %q: %q", dir, got)
		}
	}
}

func testInvalidNames(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	bad := []string{"", ".", "..", "a/b", "nul\x00", strings.Repeat("n", storage.MaxNameLen+1)}
	for _, n := range bad {
		err := b.Put(ctx, "", n, strings.NewReader("x"), 1)
		wantErr(t, fmt.Sprintf("put name %q", n), err, storage.ErrInvalidName)
		_, err = b.Get(ctx, "", n)
		wantErr(t, fmt.Sprintf("get name %q", n), err, storage.ErrInvalidName)
	}
	for _, d := range []string{"/a", "a/", "a//b", "a/../b", "./a"} {
		err := b.Put(ctx, d, "f", strings.NewReader("x"), 1)
		wantErr(t, fmt.Sprintf("put dir %q", d), err, storage.ErrInvalidName)
		_, err = b.List(ctx, d)
		wantErr(t, fmt.Sprintf("list dir %q", d), err, storage.ErrInvalidName)
		wantErr(t, fmt.Sprintf("create dir %q", d), b.Create(ctx, d), storage.ErrInvalidName)
	}
	if got := names(t, b, ""); got != "" {
		t.Fatalf("invalid names left entries: %q", got)
	}
}

func testListStat(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	put(t, b, "", "b", []byte("bb"))
	put(t, b, "", "a", []byte("a"))
	put(t, b, "d/e", "f", []byte("fff"))
	if err := b.Create(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b, ""); got != "a,b,c/,d/" {
		t.Fatalf("root lists %q", got)
	}
	infos, _ := b.List(ctx, "d/e")
	if len(infos) != 1 || infos[0].Size != 3 || infos[0].Path() != "d/e/f" {
		t.Fatalf("list d/e: %+v", infos)
	}
	if i, err := b.Stat(ctx, "d", "e"); err != nil || !i.IsDir {
		t.Fatalf("stat dir: %+v %v", i, err)
	}
	if i, err := b.Stat(ctx, "", "b"); err != nil || i.IsDir || i.Size != 2 {
		t.Fatalf("stat file: %+v %v", i, err)
	}
	_, err := b.List(ctx, "a")
	wantErr(t, "list a file", err, storage.ErrNotDir)
	// A directory created implicitly by Put survives the deletion of its last file.
	if err := b.Delete(ctx, "d/e", "f"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b, "d/e"); got != "" {
		t.Fatalf("d/e lists %q after delete", got)
	}
}

func testNotFound(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	_, err := b.Get(ctx, "", "missing")
	wantErr(t, "get", err, storage.ErrNotFound)
	_, err = b.Get(ctx, "no/such/dir", "missing")
	wantErr(t, "get in missing dir", err, storage.ErrNotFound)
	_, err = b.Stat(ctx, "", "missing")
	wantErr(t, "stat", err, storage.ErrNotFound)
	_, err = b.List(ctx, "missing")
	wantErr(t, "list", err, storage.ErrNotFound)
	wantErr(t, "delete", b.Delete(ctx, "", "missing"), storage.ErrNotFound)
	wantErr(t, "move", b.Move(ctx, "", "missing", "", "other"), storage.ErrNotFound)
	if err := b.Create(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	_, err = b.Get(ctx, "", "d")
	wantErr(t, "get a directory", err, storage.ErrIsDir)
	err = b.Put(ctx, "", "d", strings.NewReader("x"), 1)
	wantErr(t, "put onto a directory", err, storage.ErrIsDir)
	if infos, err := b.List(ctx, ""); err != nil || len(infos) != 1 {
		t.Fatalf("root after failed puts: %+v %v", infos, err)
	}
}

func testCreate(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	if err := b.Create(ctx, "x/y/z"); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, "x/y"); err != nil {
		t.Fatalf("create existing dir: %v", err)
	}
	if got := names(t, b, "x/y"); got != "z/" {
		t.Fatalf("x/y lists %q", got)
	}
	if got := names(t, b, "x/y/z"); got != "" {
		t.Fatalf("x/y/z lists %q", got)
	}
	put(t, b, "x", "file", []byte("f"))
	wantErr(t, "create over a file", b.Create(ctx, "x/file"), storage.ErrNotDir)
	wantErr(t, "create below a file", b.Create(ctx, "x/file/sub"), storage.ErrNotDir)
	err := b.Put(ctx, "x/file", "sub", strings.NewReader("s"), 1)
	wantErr(t, "put below a file", err, storage.ErrNotDir)
}

func testDelete(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	put(t, b, "full", "f", []byte("f"))
	if err := b.Create(ctx, "empty"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete non-empty dir", b.Delete(ctx, "", "full"), storage.ErrNotEmpty)
	if err := b.Delete(ctx, "", "empty"); err != nil {
		t.Fatalf("delete empty dir: %v", err)
	}
	if err := b.Delete(ctx, "full", "f"); err != nil {
		t.Fatalf("delete file: %v", err)
	}
	_, err := b.Get(ctx, "full", "f")
	wantErr(t, "get deleted", err, storage.ErrNotFound)
	if err := b.Delete(ctx, "", "full"); err != nil {
		t.Fatalf("delete emptied dir: %v", err)
	}
	if got := names(t, b, ""); got != "" {
		t.Fatalf("root lists %q after deletes", got)
	}
}

func testSearch(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	put(t, b, "", "x", []byte("1"))
	put(t, b, "a", "x", []byte("22"))
	put(t, b, "a/b", "x", []byte("333"))
	put(t, b, "a/b", "y", []byte("y"))
	put(t, b, "ab", "x", []byte("4444"))
	if err := b.Create(ctx, "c/x"); err != nil {
		t.Fatal(err)
	}
	paths := func(dir string) string {
		infos, err := b.Search(ctx, dir, "x")
		if err != nil {
			t.Fatalf("search %q: %v", dir, err)
		}
		var s []string
		for _, i := range infos {
			s = append(s, fmt.Sprintf("%s:%d:%v", i.Path(), i.Size, i.IsDir))
		}
		return strings.Join(s, " ")
	}
	if got, want := paths(""), "a/b/x:3:false a/x:2:false ab/x:4:false c/x:0:true x:1:false"; got != want {
		t.Fatalf("search root: %q, want %q", got, want)
	}
	if got, want := paths("a"), "a/b/x:3:false a/x:2:false"; got != want {
		t.Fatalf("search a: %q, want %q", got, want)
	}
}
