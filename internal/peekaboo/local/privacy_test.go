package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// tap collects every byte a server receives.
type tap struct {
	mu  sync.Mutex
	got [][]byte
}

func (t *tap) add(b []byte) {
	t.mu.Lock()
	t.got = append(t.got, bytes.Clone(b))
	t.mu.Unlock()
}

func marker(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// dirBytes reads every file a server stores.
func dirBytes(t *testing.T, dir string) [][]byte {
	var out [][]byte
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWhoSeesWhat reads every byte each server stores and receives during publications,
// searches (basic, advanced, exact, substring, denied, private) and an unpublication, and checks
// the claims of docs/design-peekaboo.md: the K-server never holds an owner or client name,
// a credential secret, or a value; the V-server never holds a key or a query in the clear.
func TestWhoSeesWhat(t *testing.T) {
	var kTap, vTap tap
	o := fastMix()
	o.K.TestTap = func(r *http.Request, body []byte) {
		var hdr bytes.Buffer
		r.Header.Write(&hdr)
		kTap.add(append([]byte(r.Method+" "+r.URL.String()+"\n"+hdr.String()), body...))
	}
	o.V.TestTap = func(_ string, b []byte) { vTap.add(b) }
	dir := t.TempDir()
	d := start(t, dir, o)
	ctx := context.Background()
	ownerName, clientName, otherName := marker("owner-"), marker("client-"), marker("other-")
	owner, cl, other := newClient(t, d, ownerName), newClient(t, d, clientName), newClient(t, d, otherName)
	var keys, values, queries []string
	var pairs []client.Pair
	for i := 0; i < 50; i++ {
		k, v := marker("key-"), marker("value-")
		keys, values = append(keys, k), append(values, v)
		p := client.Pair{Key: k, Value: []byte(v)}
		if i%2 == 1 {
			p.ACL = []string{clientName}
		}
		pairs = append(pairs, p)
	}
	if _, err := owner.Publish(ctx, pairs, 16, nil); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[:10] {
		sub := k[6:14] // a substring of the key that is not the key
		queries = append(queries, sub)
		for _, c := range []*client.Client{cl, other} {
			search(t, c, k, client.SearchOptions{Advanced: i%2 == 0})
			search(t, c, sub, client.SearchOptions{Substring: true, Advanced: true})
			if _, err := c.PrivateSearch(ctx, k, client.SearchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := owner.List(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Unpublish(ctx, keys[0], nil); err != nil {
		t.Fatal(err)
	}
	stop(t, d)

	secrets := []string{}
	for _, c := range []*client.Client{owner, cl, other} {
		uc, _, _ := wire.ParseUserCred(credOf[c])
		raw, _ := base64.RawURLEncoding.DecodeString(uc.Secret)
		secrets = append(secrets, uc.Secret, string(raw), string(uc.OwnerKeyBytes()))
	}
	kBytes := append(dirBytes(t, d.KDir), kTap.got...)
	vBytes := append(dirBytes(t, d.VDir), vTap.got...)
	if len(kTap.got) == 0 || len(vTap.got) == 0 {
		t.Fatal("the taps saw nothing")
	}
	forbidden := func(server string, data [][]byte, what string, needles []string) {
		for _, n := range needles {
			for _, b := range data {
				if bytes.Contains(b, []byte(n)) {
					t.Errorf("the %s holds or received a %s (%.16q)", server, what, n)
					return
				}
			}
		}
	}
	forbidden("K-server", kBytes, "user name", []string{ownerName, clientName, otherName})
	forbidden("K-server", kBytes, "credential secret or owner key", secrets)
	forbidden("K-server", kBytes, "value", values)
	forbidden("V-server", vBytes, "key", keys)
	forbidden("V-server", vBytes, "query", queries)

	// The checks can fail: each server does hold its own half.
	present := func(server string, data [][]byte, needle string) {
		for _, b := range data {
			if bytes.Contains(b, []byte(needle)) {
				return
			}
		}
		t.Errorf("the %s does not hold %q: the test would not notice a leak", server, needle)
	}
	present("K-server", dirBytes(t, d.KDir), keys[1])
	present("V-server", dirBytes(t, d.VDir), values[1])
	present("V-server", dirBytes(t, d.VDir), ownerName)
}
