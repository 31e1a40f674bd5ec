package local

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

var smallPIR = pir.Params{Bits: 8, Slots: 16}

func privateOpts() Options {
	return Options{V: vserver.Config{BatchSize: 1}, PIR: smallPIR}
}

func private(t *testing.T, c *client.Client, key string) []string {
	t.Helper()
	r, err := c.PrivateSearch(context.Background(), key, client.SearchOptions{})
	if err != nil {
		t.Fatalf("private search %q: %v", key, err)
	}
	var out []string
	for _, f := range r.Found {
		if f.Key != key {
			t.Fatalf("found key %q for %q", f.Key, key)
		}
		out = append(out, string(f.Value))
	}
	slices.Sort(out)
	return out
}

// TestPrivateQueryEndToEnd: private queries through both real servers on loopback find
// exactly the pairs an exact search finds (several owners, several pairs per key), apply
// the V-server's ACLs to values, leave pseudonym-restricted pairs out, follow
// unpublication and republication, and survive a restart of both servers.
func TestPrivateQueryEndToEnd(t *testing.T) {
	dir := t.TempDir()
	d := start(t, dir, privateOpts())
	ctx := context.Background()
	alice, bob := newClient(t, d, "alice"), newClient(t, d, "bob")
	pairs := []client.Pair{
		{Key: "report.pdf", Value: []byte("host-a:/r")},
		{Key: "photo.jpg", Value: []byte("host-a:/p")},
		{Key: "secret.txt", Value: []byte("host-a:/s"), ACL: []string{"alice"}},
		{Key: "pseudo.txt", Value: []byte("host-a:/q"), Pseudonyms: [][32]byte{{1}}},
	}
	for i := 0; i < 40; i++ { // fill buckets with other keys
		pairs = append(pairs, client.Pair{Key: "filler-" + strings.Repeat("x", i%5) + string(rune('a'+i)), Value: []byte("v")})
	}
	if _, err := alice.Publish(ctx, pairs, 7, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Publish(ctx, []client.Pair{{Key: "report.pdf", Value: []byte("host-b:/r")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	check := func(c *client.Client, key string, want ...string) {
		t.Helper()
		if got := private(t, c, key); !slices.Equal(got, want) {
			t.Fatalf("private %q: %q, want %q", key, got, want)
		}
		// The same as the basic mode's exact search, where it applies.
		if key != "pseudo.txt" {
			var basic []string
			for _, f := range search(t, c, key, client.SearchOptions{}).Found {
				basic = append(basic, string(f.Value))
			}
			slices.Sort(basic)
			if !slices.Equal(basic, want) {
				t.Fatalf("basic %q: %q, private: %q", key, basic, want)
			}
		}
	}
	check(bob, "report.pdf", "host-a:/r", "host-b:/r")
	check(bob, "photo.jpg", "host-a:/p")
	check(bob, "secret.txt")                // ACL: bob may not see it
	check(alice, "secret.txt", "host-a:/s") // the owner may
	check(bob, "pseudo.txt")                // not in the table
	check(bob, "nothing.here")
	// A fetch releases only ids in the table: not the pseudonym-restricted pair's, even to
	// someone who knows its id (here its owner).
	listed, err := alice.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range listed {
		if p.Key != "pseudo.txt" && p.Key != "photo.jpg" {
			continue
		}
		res, _, err := alice.Fetch(ctx, []wire.ID{p.ID})
		if want := map[string]int{"pseudo.txt": 0, "photo.jpg": 1}[p.Key]; err != nil || len(res.Results) != want {
			t.Fatalf("fetch of %q's id: %v %v, want %d results", p.Key, res, err, want)
		}
	}
	if n, err := alice.Unpublish(ctx, "photo.jpg", nil); err != nil || n != 1 {
		t.Fatalf("unpublish: %d %v", n, err)
	}
	check(bob, "photo.jpg")
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "photo.jpg", Value: []byte("host-a:/p2")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	stop(t, d)
	d = start(t, dir, privateOpts())
	bob = newClient(t, d, "bob2")
	check(bob, "photo.jpg", "host-a:/p2")
	check(bob, "report.pdf", "host-a:/r", "host-b:/r")
	for _, o := range []client.SearchOptions{{Substring: true}, {Limit: 5000}} {
		if _, err := bob.PrivateSearch(ctx, "photo.jpg", o); err == nil {
			t.Fatalf("%+v accepted", o)
		}
	}
	if r, err := bob.PrivateSearch(ctx, "report.pdf", client.SearchOptions{Limit: 1}); err != nil || len(r.Found) != 1 {
		t.Fatalf("limit 1: %v %v", r, err)
	}
}

// TestPrivateQueryWrongAnswersNoticed: a V-server that alters its own share or the
// K-server's sealed share, and a K-server whose share is wrong (the test holds the
// one-time key and reseals a changed answer, as a cheating K-server would), each make
// the client fail with an integrity error, never return a wrong result.
func TestPrivateQueryWrongAnswersNoticed(t *testing.T) {
	d := start(t, t.TempDir(), privateOpts())
	ctx := context.Background()
	alice := newClient(t, d, "alice")
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "k", Value: []byte("v")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	p, err := alice.PIRParams(ctx)
	if err != nil || p != smallPIR {
		t.Fatalf("params %+v %v", p, err)
	}
	for _, tamper := range []string{"none", "v-share", "k-share-sealed", "k-share"} {
		pq, err := alice.NewPrivateQuery(p, "k")
		if err != nil {
			t.Fatal(err)
		}
		b, err := alice.SendPrivate(ctx, pq)
		if err != nil {
			t.Fatal(err)
		}
		b = tamperReply(t, pq, b, tamper)
		ids, err := pq.Open(p, b)
		if tamper == "none" {
			if err != nil || len(ids) != 1 {
				t.Fatalf("honest answer: %v %v", ids, err)
			}
			continue
		}
		if !errors.Is(err, client.ErrIntegrity) {
			t.Fatalf("%s: %v, want an integrity error", tamper, err)
		}
	}
}

func tamperReply(t *testing.T, pq *client.PrivateQuery, b []byte, how string) []byte {
	rep, err := wire.ParsePIRReply(b)
	if err != nil {
		t.Fatal(err)
	}
	switch how {
	case "v-share":
		rep.Share0[3] ^= 1
	case "k-share-sealed":
		rep.Sealed1[3] ^= 1
	case "k-share":
		a, err := wire.OpenPIRAnswer(pq.Query, rep.Sealed1)
		if err != nil {
			t.Fatal(err)
		}
		a[len(a)-1] ^= 0x80
		rep.Sealed1 = wire.SealPIRAnswer(pq.Query, a)
	}
	return rep.Marshal()
}
