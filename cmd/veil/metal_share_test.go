package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// TestMetalShareCLI is the README's sharing walk-through against two server processes:
// bob makes an anonym offline and gives it to alice; alice writes a file and shares it
// read-only; bob receives and reads it but cannot write it; an altered anonym gets nothing;
// Server 1 is SIGKILLed between the share and the receive; a second receive finds nothing new; the servers' directories never hold the content.
func TestMetalShareCLI(t *testing.T) {
	m := startMetal(t)
	alice, bob := m.user(t, "alice"), m.user(t, "bob")
	anonym := strings.TrimSpace(bob.mustRun(t, "metal", "anonym", "new"))
	var second struct {
		Index  uint32
		Anonym string
	}
	if err := json.Unmarshal([]byte(bob.mustRun(t, "metal", "anonym", "new", "--json")), &second); err != nil || second.Index != 1 || second.Anonym == anonym {
		t.Fatalf("second anonym: %+v %v", second, err)
	}
	if !strings.HasPrefix(anonym, "veil-anonym-") {
		t.Fatalf("anonym %q", anonym)
	}
	anonFile := filepath.Join(t.TempDir(), "bob.anonym")
	os.WriteFile(anonFile, []byte(anonym+"\n"), 0o600)

	note := filepath.Join(t.TempDir(), "note.txt")
	os.WriteFile(note, []byte("shared with bob\n"), 0o600)
	alice.mustRun(t, "metal", "write", "1", note)
	if out := alice.mustRun(t, "metal", "share", "1", "--to", "@"+anonFile); !strings.Contains(out, "shared file id 1 (r)") {
		t.Fatalf("share: %q", out)
	}
	// An anonym altered in transit: still parses, refused inside 2PC, without telling the
	// sender (a verdict on the anonym is an oracle on its owner's secret): its entry opens
	// for nobody (bob receives one capability of the two entries, below).
	i := len("veil-anonym-") + 700
	altered := anonym[:i] + map[bool]string{true: "A", false: "B"}[anonym[i] != 'A'] + anonym[i+1:]
	if _, errs, code := alice.run(t, "metal", "share", "0", "--to", altered); code != 0 {
		t.Fatalf("altered anonym: exit %d, %q", code, errs)
	}
	if errs := alice.mustFail(t, "metal", "share", "1", "--to", "not-an-anonym"); !strings.Contains(errs, "anonym") {
		t.Fatalf("garbage anonym: %q", errs)
	}
	// SIGKILL Server 1 between the share and the receive: the entry was committed first.
	m.proc[0].Kill()
	m.serve(t, 0)
	testutil.WaitFor(t, 60*time.Second, "server 1 back after SIGKILL", func() bool {
		_, _, code := bob.run(t, "metal", "ls")
		_, _, code2 := alice.run(t, "metal", "read", "1")
		return code == 0 && code2 == 0
	})
	var rec struct {
		Received []struct {
			ID     uint64
			Perm   string
			Anonym uint32
		}
		Entries int
	}
	if err := json.Unmarshal([]byte(bob.mustRun(t, "metal", "receive", "--json")), &rec); err != nil || len(rec.Received) != 1 ||
		rec.Received[0].ID != 1 || rec.Received[0].Perm != "r" || rec.Received[0].Anonym != 0 || rec.Entries != 2 {
		t.Fatalf("bob receive: %+v %v", rec, err)
	}
	if out := bob.mustRun(t, "metal", "read", "1"); out != "shared with bob\n" {
		t.Fatalf("bob reads %q", out)
	}
	if _, errs, code := bob.run(t, "metal", "write", "1", note); code == 0 || !strings.Contains(errs, "refused") {
		t.Fatalf("bob writing a read-only share: exit %d, %q", code, errs)
	}
	if out := bob.mustRun(t, "metal", "ls"); !strings.Contains(out, "1\tr\treceived via anonym 0") {
		t.Fatalf("bob ls: %q", out)
	}
	if out := bob.mustRun(t, "metal", "receive"); !strings.Contains(out, "0 capabilities received (0 entries downloaded)") {
		t.Fatalf("second receive: %q", out)
	}
	if out := alice.mustRun(t, "metal", "receive"); !strings.Contains(out, "0 capabilities received") {
		t.Fatalf("alice receive: %q", out)
	}
	for _, d := range m.dir {
		b, _ := os.ReadFile(filepath.Join(d, "metal.db"))
		if strings.Contains(string(b), "shared with bob") {
			t.Fatalf("%s holds the content in the clear", d)
		}
	}
}
