package storeserver

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// `veil store gc --dir` (and fsck) run beside a node serving the same data directory, as
// docs/deploy.md allows for a PostgreSQL store, spare the temporary file of an upload the
// node is receiving, and still remove one no upload holds (a crash's). Found deploying:
// the sweep knew only its own process's uploads, removed the node's file mid-upload, the
// put failed with 503 and the node's blob breaker opened.
func TestSweepOfAnotherProcessSparesLiveUpload(t *testing.T) {
	node := newPGService(t, Config{})
	ns, _ := addUser(t, node, "alice")
	gcer, err := Open(node.dir, Config{}) // what `veil store gc --dir DIR` opens
	if err != nil {
		t.Fatal(err)
	}
	defer gcer.Close()
	want := randBytes(7, 1<<20)
	pr, pw := io.Pipe()
	put := make(chan error, 1)
	go func() { put <- ns.Put(t.Context(), "", "big", pr, int64(len(want))) }()
	if _, err := pw.Write(want[:len(want)/2]); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(node.dir, tmpName)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ents, _ := os.ReadDir(tmp); len(ents) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no upload file appeared")
		}
	}
	crashed := filepath.Join(tmp, "up-crashed")
	if err := os.WriteFile(crashed, []byte("left by a killed node"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := gcer.Fsck(t.Context()); err != nil || rep.StaleUploads != 1 {
		t.Fatalf("fsck beside the upload: %+v, %v (want the crashed file alone stale)", rep, err)
	}
	if rep, err := gcer.GC(t.Context()); err != nil || rep.StaleUploads != 1 {
		t.Fatalf("gc beside the upload: %+v, %v (want the crashed file alone removed)", rep, err)
	}
	if _, err := os.Stat(crashed); !os.IsNotExist(err) {
		t.Fatalf("the crashed upload's file is still there: %v", err)
	}
	if _, err := pw.Write(want[len(want)/2:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-put; err != nil {
		t.Fatalf("the put gc ran beside failed: %v", err)
	}
	if got, err := getBytes(t, ns, "", "big"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v", err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("%d files left in tmp/", len(ents))
	}
}
