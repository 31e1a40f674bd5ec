package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
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

// veil bench store-nodes runs end to end: one bbolt node and two nodes sharing a
// PostgreSQL it starts, every put acknowledged; the CPU figures are checked by hand (clock ticks of 10 ms).
func TestBenchStoreNodes(t *testing.T) {
	testutil.StartPostgres(t) // skips (or fails under VEIL_REQUIRE_INTEGRATION) without PostgreSQL
	out, err := exec.Command(veilBin, "bench", "store-nodes", "--seconds", "0.3", "--rounds", "1", "--clients", "4", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var setups []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Setup   string  `json:"setup"`
			Ops     int64   `json:"ops"`
			NodeCPU float64 `json:"node_cpu_us_per_put"`
			Ratio   string  `json:"ratio"`
			Value   float64 `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if r.Setup != "" {
			if r.Ops == 0 {
				t.Fatalf("empty measurement: %s", line)
			}
			setups = append(setups, r.Setup)
		} else if r.Value <= 0 {
			t.Fatalf("ratio: %s", line)
		}
	}
	if strings.Join(setups, ",") != "1 bbolt node,2 nodes + postgres" {
		t.Fatalf("set-ups %v\n%s", setups, out)
	}
}
