package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Two devices of one user put a folder of the same name at the same moment, through the
// real storage service. Found by a new user's walkthrough: both puts reported success,
// and the snapshot of the one whose records the other replaced could not restore them
// ("this version is not kept"), while 'veil check' said no damage. Records are now
// written as compare-and-swaps (batch version 4): every snapshot restores every file.
// The puts are run again until their record writes interleave (the log says a write lost
// a race), at most 5 rounds.
func TestE2EConcurrentPutsOfOneFolder(t *testing.T) {
	d := startServe(t, "alice")
	a := d.newUser(t, "alice")
	b := &user{name: "alice", config: filepath.Join(t.TempDir(), "profile"), passFile: a.passFile}
	if out, err := exec.Command("cp", "-a", a.config, b.config).CombinedOutput(); err != nil {
		t.Fatalf("copy the profile: %v: %s", err, out)
	}
	raced := false
	for round := 0; round < 5 && !raced; round++ {
		srcs := [2]string{}
		for i := range srcs {
			srcs[i] = filepath.Join(t.TempDir(), "race")
			for f := 0; f < 60; f++ {
				randomFile(t, filepath.Join(srcs[i], fmt.Sprintf("f%02d", f)), 20<<10, byte(round*16+i*7+f))
			}
		}
		var wg sync.WaitGroup
		var errs [2]string
		var codes [2]int
		for i, u := range []*user{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i], codes[i] = u.run(t, "put", "-v", srcs[i])
			}()
		}
		wg.Wait()
		for i := range codes {
			if codes[i] != 0 {
				t.Fatalf("round %d: put %d: exit %d: %s", round, i, codes[i], errs[i])
			}
			raced = raced || strings.Contains(errs[i], "another command wrote this record meanwhile")
		}
		var snaps []struct {
			Seq uint64 `json:"snapshot"`
		}
		if err := json.Unmarshal([]byte(a.mustRun(t, "snapshots", "--json")), &snaps); err != nil {
			t.Fatal(err)
		}
		if len(snaps) < 2*(round+1) {
			t.Fatalf("round %d: %d snapshots, want at least %d", round, len(snaps), 2*(round+1))
		}
		for _, s := range snaps {
			out := filepath.Join(t.TempDir(), "out")
			if _, errs, code := a.run(t, "get", "--snapshot", fmt.Sprint(s.Seq), "race", out); code != 0 {
				t.Fatalf("round %d: snapshot %d does not restore: exit %d: %s", round, s.Seq, code, errs)
			}
		}
		if out, errs, code := a.run(t, "check"); code != 0 {
			t.Fatalf("round %d: check: exit %d\n%s%s", round, code, out, errs)
		}
	}
	if !raced {
		t.Skip("the two puts never wrote a record of one path at once in 5 rounds")
	}
}
