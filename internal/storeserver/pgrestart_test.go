package storeserver

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/testutil"
)

// PostgreSQL ending the node's connections (a restart, a failover: SQLSTATE 57P01
// "terminating connection due to administrator command") makes the requests that meet
// them unavailable (503: the client retries or goes to another node), not internal
// errors (500, not retried), and the node answers again on fresh connections. Found
// deploying: 'pg_ctl restart' under two nodes failed the next client command with
// "store: internal error".
func TestPGConnectionsEndedAreUnavailable(t *testing.T) {
	pg := testutil.StartPostgres(t)
	s := newServiceOn(t, pg.URL, Config{})
	ns, _ := addUser(t, s, "alice")
	putBytes(t, ns, "", "a", []byte("small"))
	for range 4 { // several pooled connections
		if _, err := ns.List(t.Context(), ""); err != nil {
			t.Fatal(err)
		}
	}
	c, err := pgx.Connect(t.Context(), pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND usename = 'veil'`)
	c.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for range 8 {
		_, err := ns.List(t.Context(), "")
		if err != nil {
			failed++
			if !errors.Is(err, storewire.ErrUnavailable) {
				t.Fatalf("a request on an ended connection: %v (want unavailable)", err)
			}
			t.Logf("on an ended connection: %v", err)
		}
	}
	if _, err := ns.List(t.Context(), ""); err != nil {
		t.Fatalf("no answer on fresh connections: %v", err)
	}
	t.Logf("%d of 8 requests met an ended connection", failed)
}
