package dupless

import (
	"bytes"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storeserver/storetest"
)

// rmService is a real storage service over TLS that counts the requests it is sent by
// "METHOD route" ("GET files", "POST move"); an older one answers moves as a service from
// before conditional moves (session 14) does, counting those it refused.
type rmService struct {
	be      *remote.Backend
	ns      *storeserver.Namespace // alice's, to damage objects behind the client
	refused atomic.Int64
	mu      sync.Mutex
	n       map[string]int
}

func serveCounting(t *testing.T, older bool) *rmService {
	s, cred, _ := storetest.Open(t, storetest.Options{})
	rs := &rmService{n: map[string]int{}}
	h := s.Handler()
	if older {
		h = storetest.OlderMoves(t, h, &rs.refused)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
		rs.mu.Lock()
		rs.n[r.Method+" "+route]++
		rs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cred.CA = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	var err error
	if rs.be, err = remote.New(srv.URL, cred); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.be.Close() })
	if rs.ns, err = s.Namespace("alice"); err != nil {
		t.Fatal(err)
	}
	return rs
}

// counts returns the requests counted since the last call.
func (rs *rmService) counts() map[string]int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := rs.n
	rs.n = map[string]int{}
	return n
}

// kept returns the kept versions stored (.veil/versions/<hh>/<sha256>).
func (rs *rmService) kept(t *testing.T) []string {
	t.Helper()
	dirs, err := rs.ns.List(ctx, versionsDir)
	if err != nil && !strings.Contains(err.Error(), storage.ErrNotFound.Error()) {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		objs, err := rs.ns.List(ctx, d.Path())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			out = append(out, o.Path())
		}
	}
	return out
}

// damage flips a byte of the object dir/name on the service, behind the client.
func (rs *rmService) damage(t *testing.T, dir, name string) {
	t.Helper()
	rc, err := rs.ns.Get(ctx, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := rs.ns.Put(ctx, dir, name, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

func rmClient(t *testing.T, rs *rmService) *Client {
	c, err := New(rs.be, NewMasterKey(), Options{Keys: mle.LocalKeys{}, Jobs: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// rm -r over the storage service costs one request per record, as before rm checked what
// it keeps (TestRemoveDamagedRecordKeepsNothing): the service moves each record to its
// kept name only while it is the version the tree root lists (a conditional move), so the
// client reads none of them. Found by a benchmark: rm -r of 5,000 files over veil serve
// took 20-30% longer once it read every record before keeping it. Against a service from
// before conditional moves the client reads each record first, as then, after at most one
// refused conditional move per worker. Either way every version is kept and reads.
func TestRemoveTreeOneRequestPerFile(t *testing.T) {
	for _, older := range []bool{false, true} {
		name := map[bool]string{false: "conditional", true: "older"}[older]
		t.Run(name, func(t *testing.T) {
			rs := serveCounting(t, older)
			c := rmClient(t, rs)
			const files, folders = 60, 6 // small and its d0..d4
			mustPut(t, c, smallTree(t, files), "")
			rs.counts()
			sum, err := c.Remove(ctx, "small", true)
			if err != nil || sum.Files != files || sum.Damaged != 0 {
				t.Fatalf("rm -r: %+v %v", sum, err)
			}
			n := rs.counts()
			total := 0
			for _, k := range n {
				total += k
			}
			t.Logf("requests: %d %v (%d refused as unknown)", total, n, rs.refused.Load())
			reads, moves := n["GET files"], n["POST move"]
			if !older && (reads > 5 || moves != files+folders || total > files+folders+30) {
				t.Fatalf("rm -r of %d records: %d requests, %d reads, %d moves: want one move per record, no reads", files+folders, total, reads, moves)
			}
			if older && (reads < files+folders || rs.refused.Load() < 1 || rs.refused.Load() > 8) {
				t.Fatalf("rm -r on an older service: %d reads, %d refused conditional moves: want every record read, at most one refusal per worker", reads, rs.refused.Load())
			}
			if kept := rs.kept(t); len(kept) != files+folders {
				t.Fatalf("%d kept versions, want %d", len(kept), files+folders)
			}
			if res, err := c.Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 0 || res.Versions < files+folders {
				t.Fatalf("check after rm -r: %+v %v", res, err)
			}
		})
	}
}

// The protection TestRemoveDamagedRecordKeepsNothing pins, over the storage service with
// and without conditional moves: a record whose object is not the version the root lists
// (damaged behind the client) is deleted, not kept, and said damaged; sound ones are kept.
func TestRemoveDamagedOverService(t *testing.T) {
	for _, older := range []bool{false, true} {
		name := map[bool]string{false: "conditional", true: "older"}[older]
		t.Run(name, func(t *testing.T) {
			rs := serveCounting(t, older)
			c := rmClient(t, rs)
			dir := t.TempDir()
			write(t, filepath.Join(dir, "a"), randBytes(700<<10, 1))
			for i, f := range []string{"b", "c", "e"} {
				write(t, filepath.Join(dir, "d", f), randBytes(5000+i, uint64(2+i)))
			}
			mustPut(t, c, dir+"/a", "")
			mustPut(t, c, dir+"/d", "")
			damageFile := func(path string) {
				if err := c.refresh(ctx); err != nil {
					t.Fatal(err)
				}
				encDir, encName, err := c.encFile(path)
				if err != nil {
					t.Fatal(err)
				}
				rs.damage(t, encDir, encName+keySuffix)
			}
			damageFile("a")
			sum, err := c.Remove(ctx, "a", false)
			if err != nil || sum.Files != 1 || sum.Damaged != 1 {
				t.Fatalf("rm of a damaged file: %+v %v", sum, err)
			}
			if kept := rs.kept(t); len(kept) != 0 {
				t.Fatalf("rm kept the damaged object as a version: %v", kept)
			}
			sum, err = c.Remove(ctx, "d/b", false)
			if err != nil || sum.Damaged != 0 || len(rs.kept(t)) != 1 {
				t.Fatalf("rm of a sound file: %+v %v %v", sum, err, rs.kept(t))
			}
			damageFile("d/c")
			enc, _ := c.keys.encPath("d")
			rs.damage(t, enc, dirMetaName)
			sum, err = c.Remove(ctx, "d", true)
			if err != nil || sum.Files != 2 || sum.Damaged != 2 {
				t.Fatalf("rm -r of a folder with damaged records: %+v %v", sum, err)
			}
			if kept := rs.kept(t); len(kept) != 2 { // d/b's and d/e's
				t.Fatalf("kept versions: %v", kept)
			}
			statsPruneCheck(t, c, 2, "a", "d", "d/c")
		})
	}
}
