package storeserver

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/verr"
)

// blobPath returns the content file of dir/name in alice's namespace.
func blobHash(t *testing.T, s *Service, user, dir, name string) [32]byte {
	t.Helper()
	var h [32]byte
	err := s.meta.view(t.Context(), func(tx metaTx) error {
		e, _, err := tx.entry(user, dir, name)
		h = e.hash
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// blobOf names the stored copy of dir/name's content (blobID: its hash and its record's key).
func blobOf(t *testing.T, s *Service, user, dir, name string) blobID {
	t.Helper()
	b := blobID{h: blobHash(t, s, user, dir, name)}
	err := s.meta.view(t.Context(), func(tx metaTx) error {
		r, _, _, err := tx.blob(b.h)
		b.key = r.key
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCorruptContent flips one byte of a stored content file: fsck reports it, and get
// fails with storage.ErrIntegrity in-process and through the HTTPS API, never serving the
// bad bytes as good.
func TestCorruptContent(t *testing.T) {
	s := newTestService(t, Config{})
	ns, cred := addUser(t, s, "alice")
	data := randBytes(7, 1<<20)
	putBytes(t, ns, "d", "f", data)
	putBytes(t, ns, "d", "g", randBytes(8, 300<<10))
	p := s.blobs.(diskBlobs).path(blobOf(t, s, "alice", "d", "f"))
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Fsck(t.Context())
	if err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "corrupt") {
		t.Fatalf("fsck: %+v %v", rep, err)
	}
	if _, err := getBytes(t, ns, "d", "f"); !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("in-process get of corrupt content: %v", err)
	}
	rb := remoteFor(t, serve(t, s), cred)
	if _, err := getBytes(t, rb, "d", "f"); !errors.Is(err, storage.ErrIntegrity) || !errors.Is(err, verr.ErrIntegrity) {
		t.Fatalf("remote get of corrupt content: %v", err)
	}
	if _, err := getBytes(t, rb, "d", "g"); err != nil {
		t.Fatalf("intact neighbour: %v", err)
	}
	// A truncated file is caught before any byte is sent.
	os.WriteFile(p, raw[:100], 0o600)
	if _, err := rb.Get(t.Context(), "d", "f"); !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("remote get of truncated content: %v", err)
	}
	// Re-uploading the same bytes heals the blob (the rename replaces the bad file).
	putBytes(t, rb, "d", "again", data)
	if got, err := getBytes(t, rb, "d", "f"); err != nil || string(got) != string(data) {
		t.Fatalf("after healing: %v", err)
	}
	fsckClean(t, s)
}

// TestCorruptInline corrupts small content kept in the database.
func TestCorruptInline(t *testing.T) {
	s := newTestService(t, Config{})
	ns, _ := addUser(t, s, "alice")
	putBytes(t, ns, "", "small", []byte("small content"))
	h := blobHash(t, s, "alice", "", "small")
	boltDB(t, s).Update(func(tx *bolt.Tx) error {
		r, _ := parseBlobRec(tx.Bucket(bucketBlobs).Get(h[:]))
		return tx.Bucket(bucketData).Put(dataKey(r.dataID), []byte("small contenT"))
	})
	if _, err := getBytes(t, ns, "", "small"); !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("get: %v", err)
	}
	if rep, _ := s.Fsck(t.Context()); rep.Clean() {
		t.Fatal("fsck missed corrupt inline content")
	}
}

// TestAuth checks credentials, roles and namespace isolation over HTTPS.
func TestAuth(t *testing.T) {
	s := newTestService(t, Config{})
	_, ca := addUser(t, s, "alice")
	_, cb := addUser(t, s, "bob")
	url := serve(t, s)
	alice, bob := remoteFor(t, url, ca), remoteFor(t, url, cb)
	putBytes(t, alice, "", "same-name", []byte("alice's"))
	putBytes(t, bob, "", "same-name", []byte("bob's"))
	if got, _ := getBytes(t, alice, "", "same-name"); string(got) != "alice's" {
		t.Fatalf("alice reads %q", got)
	}
	if err := bob.Delete(t.Context(), "", "same-name"); err != nil {
		t.Fatal(err)
	}
	if got, _ := getBytes(t, alice, "", "same-name"); string(got) != "alice's" {
		t.Fatalf("bob's delete touched alice's name: %q", got)
	}
	forged := ca
	forged.Secret = cb.Secret
	if _, err := remoteFor(t, url, forged).List(t.Context(), ""); !errors.Is(err, storewire.ErrUnauthorized) {
		t.Fatalf("wrong secret: %v", err)
	}
	admin, err := storewire.LoadCredential(s.dir + "/" + AdminCredentialFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remoteFor(t, url, admin).List(t.Context(), ""); !errors.Is(err, storage.ErrPermission) {
		t.Fatalf("admin used as a namespace: %v (want 403 permission)", err)
	}
	// Stats and metrics: admin only.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(t, ca)}}
	for _, c := range []struct {
		path string
		cred storewire.Credential
		want int
	}{{"/v1/stats", ca, 403}, {"/v1/stats", admin, 200}, {"/metrics", ca, 403}, {"/metrics", admin, 200}, {"/v1/stats", forged, 401}, {"/metrics", forged, 401}} {
		req, _ := http.NewRequest("GET", url+c.path, nil)
		req.SetBasicAuth(c.cred.User, c.cred.Secret)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("%s as %s: %d %s", c.path, c.cred.User, resp.StatusCode, body)
		}
	}
	resp, err := client.Get(url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
}

// TestLimits checks the object size limit and the per-user quota.
func TestLimits(t *testing.T) {
	s := newTestService(t, Config{MaxObjectSize: 100 << 10})
	_, cred := addUser(t, s, "alice", WithQuota(150<<10))
	rb := remoteFor(t, serve(t, s), cred)
	if err := rb.Put(t.Context(), "", "big", strings.NewReader(string(randBytes(1, 100<<10+1))), -1); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("object over the limit: %v", err)
	}
	if err := rb.Put(t.Context(), "", "big", strings.NewReader(string(randBytes(1, 4<<20))), 4<<20); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("declared length over the limit: %v", err)
	}
	putBytes(t, rb, "", "a", randBytes(2, 100<<10))
	if err := rb.Put(t.Context(), "", "b", strings.NewReader(string(randBytes(3, 60<<10))), 60<<10); !errors.Is(err, storage.ErrQuota) {
		t.Fatalf("over quota: %v", err)
	}
	putBytes(t, rb, "", "a", randBytes(4, 10<<10)) // replacing shrinks usage
	putBytes(t, rb, "", "b", randBytes(5, 60<<10))
	fsckClean(t, s)
}
