package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/testutil"
)

// veil store init --db keeps the metadata in PostgreSQL: users added offline are there,
// fsck reads it, a second init on the same database is refused, and a URL with a
// password is refused before anything is written.
func TestStoreInitDB(t *testing.T) {
	pg := testutil.StartPostgres(t)
	ctx := context.Background()
	dir, db := t.TempDir(), pg.NewSchema(t)
	if out, err := storeRun(t, ctx, "store", "init", "--dir", dir, "--db", db); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if got, err := storeserver.MetaDB(dir); err != nil || got != db {
		t.Fatalf("recorded %q %v", got, err)
	}
	if out, err := storeRun(t, ctx, "store", "user", "add", "--dir", dir, "alice", "--out", t.TempDir()+"/alice.cred"); err != nil {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	out, err := storeRun(t, ctx, "store", "user", "list", "--dir", dir)
	if err != nil || !strings.Contains(out, "alice") {
		t.Fatalf("user list: %v\n%s", err, out)
	}
	if out, err := storeRun(t, ctx, "store", "fsck", "--dir", dir); err != nil || !strings.Contains(out, "clean") {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
	if _, err := storeRun(t, ctx, "store", "init", "--dir", t.TempDir(), "--db", db); !errors.Is(err, storeserver.ErrDBInitialized) {
		t.Fatalf("second init on the same database: %v", err)
	}
	withPass := strings.Replace(db, "veil@", "veil:secret@", 1)
	if _, err := storeRun(t, ctx, "store", "init", "--dir", t.TempDir(), "--db", withPass); err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("password in --db: %v", err)
	}
}
