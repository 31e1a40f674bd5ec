package local

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
)

func start(t *testing.T, dir string, o Options) *Deployment {
	t.Helper()
	d, err := Start(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.cancel != nil {
			d.Stop()
		}
	})
	return d
}

func stop(t *testing.T, d *Deployment) {
	t.Helper()
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	d.cancel = nil
}

func newClient(t *testing.T, d *Deployment, name string) *client.Client {
	t.Helper()
	cred, err := d.AddUser(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cred)
	if err != nil {
		t.Fatal(err)
	}
	credOf[c] = cred
	t.Cleanup(c.Close)
	return c
}

func search(t *testing.T, c *client.Client, q string, o client.SearchOptions) *client.SearchResult {
	t.Helper()
	r, err := c.Search(context.Background(), q, o)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return r
}

func fastMix() Options {
	return Options{V: vserver.Config{MaxDelay: time.Millisecond}}
}

func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	d := start(t, dir, fastMix())
	ctx := context.Background()
	alice, bob, carol := newClient(t, d, "alice"), newClient(t, d, "bob"), newClient(t, d, "carol")
	pairs := []client.Pair{
		{Key: "report-2026.pdf", Value: []byte("host-a:/srv/report.pdf")},
		{Key: "secret-plan.txt", Value: []byte("host-b:/plans"), ACL: []string{"bob"}},
		{Key: "report-2025.pdf", Value: []byte("host-c:/old")},
	}
	if n, err := alice.Publish(ctx, pairs, 2, nil); err != nil || n != 3 {
		t.Fatalf("publish: %d %v", n, err)
	}
	r := search(t, bob, "report-2026.pdf", client.SearchOptions{})
	if len(r.Found) != 1 || string(r.Found[0].Value) != "host-a:/srv/report.pdf" || r.Found[0].Key != "" {
		t.Fatalf("exact: %+v", r.Found)
	}
	r = search(t, bob, "report-", client.SearchOptions{Substring: true, Advanced: true})
	var keys []string
	for _, f := range r.Found {
		keys = append(keys, f.Key)
	}
	if !slices.Equal(keys, []string{"report-2026.pdf", "report-2025.pdf"}) {
		t.Fatalf("substring advanced keys: %q", keys)
	}
	if r := search(t, bob, "report-", client.SearchOptions{Substring: true, Limit: 1}); len(r.Found) != 1 {
		t.Fatalf("limit 1: %d results", len(r.Found))
	}
	if r := search(t, bob, "plan", client.SearchOptions{Substring: true}); len(r.Found) != 1 {
		t.Fatalf("bob (on the ACL): %d results", len(r.Found))
	}
	denied := search(t, carol, "plan", client.SearchOptions{Substring: true})
	none := search(t, carol, "no-such-key", client.SearchOptions{Substring: true})
	if len(denied.Found) != 0 || len(none.Found) != 0 || denied.ReplyBytes != none.ReplyBytes {
		t.Fatalf("unauthorised %d results/%d bytes vs no match %d/%d", len(denied.Found), denied.ReplyBytes, len(none.Found), none.ReplyBytes)
	}
	list, err := alice.List(ctx)
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if l, _ := bob.List(ctx); len(l) != 0 {
		t.Fatalf("bob lists %d pairs of alice's", len(l))
	}
	if n, err := bob.Unpublish(ctx, "secret-plan.txt", nil); err != nil || n != 0 {
		t.Fatalf("bob unpublished alice's pair: %d %v", n, err)
	}
	if n, err := alice.Unpublish(ctx, "secret-plan.txt", nil); err != nil || n != 1 {
		t.Fatalf("unpublish: %d %v", n, err)
	}
	if r := search(t, bob, "plan", client.SearchOptions{Substring: true}); len(r.Found) != 0 {
		t.Fatalf("after unpublish: %d results", len(r.Found))
	}

	// Both servers keep their state across a restart.
	stop(t, d)
	d = start(t, dir, fastMix())
	bob2, err := client.New(mustCred(t, bob))
	if err != nil {
		t.Fatal(err)
	}
	defer bob2.Close()
	if r := search(t, bob2, "report", client.SearchOptions{Substring: true}); len(r.Found) != 2 {
		t.Fatalf("after restart: %d results", len(r.Found))
	}
	if d.K.Pairs() != 2 {
		t.Fatalf("k-server holds %d pairs after restart", d.K.Pairs())
	}
}

// credOf lets a test reconnect as the same user after a restart.
var credOf = map[*client.Client][]byte{}

func mustCred(t *testing.T, c *client.Client) []byte {
	b, ok := credOf[c]
	if !ok {
		t.Fatal("no credential recorded")
	}
	return b
}
