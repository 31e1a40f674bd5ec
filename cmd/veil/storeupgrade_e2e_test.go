package main

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Opening a single-machine store of an older database version upgrades it, which the
// older binaries then refuse: the command that did it says so on stderr, once (found by a
// user walkthrough: 'veil store stats' upgraded a session 16 store without a word, though
// docs/deploy.md asks for a copy first where going back may be needed).
func TestE2EStoreUpgradeIsTold(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if out, errs, code := opVeil(t, "store", "init", "--dir", dir); code != 0 {
		t.Fatalf("init: exit %d %s %s", code, out, errs)
	}
	// What sessions 15 and 16 wrote (version 2; their record of the empty content is
	// optional to the upgrade, and TestBoltStoreUpgrade has it).
	db, err := bolt.Open(filepath.Join(dir, "meta.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{2}) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	told := "upgraded the store in " + dir + " from database version 2 to 3: veil of session 16 and older refuses it now (docs/deploy.md, Upgrading)\n"
	if out, errs, code := opVeil(t, "store", "stats", "--dir", dir); code != 0 || errs != told || !strings.Contains(out, "dedup ratio") {
		t.Fatalf("stats of a version 2 store: exit %d, stdout %q, stderr %q; want the upgrade told: %q", code, out, errs, told)
	}
	if out, errs, code := opVeil(t, "store", "fsck", "--dir", dir); code != 0 || errs != "" {
		t.Fatalf("fsck once upgraded: exit %d, stdout %q, stderr %q; want nothing on stderr", code, out, errs)
	}
}
