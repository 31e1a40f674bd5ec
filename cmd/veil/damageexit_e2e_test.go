package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every command that meets damaged stored data (a tampered tree root, key record or kept
// version) exits 3, as check does, with or without --json, whether it stops there or goes
// on with the rest. Found by session 15: forget, prune and log exited 1 on the very
// damage check reports with 3, and log listed unreadable versions with exit 0.
func TestE2EDamageExitsThree(t *testing.T) {
	cases := []struct {
		what, glob string // the object tampered with, under the store
		cmds       [][]string
		stderr     string
	}{
		{"an old tree root", ".veil/roots/*2", [][]string{{"forget", "--keep-last", "1"}, {"forget", "--keep-last", "1", "--dry-run"},
			{"prune", "--grace", "0s"}, {"log", "notes.txt"}, {"stats"}, {"snapshots"}, {"check"}}, "snapshot"},
		{"the newest tree root", ".veil/roots/*4", [][]string{{"forget", "--keep-last", "1"}, {"prune", "--grace", "0s"}, {"log", "notes.txt"},
			{"ls"}, {"get", "notes.txt", "OUT"}, {"snapshots"}, {"check"}}, "tree root 0000000000000004"},
		{"the file's record", "*.key", [][]string{{"forget", "--keep-last", "1", "--prune", "--grace", "0s"}, {"prune", "--grace", "0s"},
			{"log", "notes.txt"}, {"get", "notes.txt", "OUT"}, {"check"}}, ""},
		{"a kept version", ".veil/versions/*/*", [][]string{{"prune", "--grace", "0s"}, {"log", "notes.txt"}, {"check"}}, ""},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.what, " ", "_"), func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			u := newUser(t, "alice", "--storage", store, "--no-keyserver")
			f := filepath.Join(t.TempDir(), "notes.txt")
			for i := range 4 { // snapshots 1..4, three kept versions
				randomFile(t, f, 2000, byte(i))
				os.Chtimes(f, time.Now(), time.Now().Add(time.Duration(i)*time.Minute))
				u.mustRun(t, "put", f)
			}
			victims, _ := filepath.Glob(filepath.Join(store, c.glob))
			if len(victims) == 0 {
				t.Fatalf("nothing matches %s", c.glob)
			}
			flipFile(t, victims[0])
			for _, args := range c.cmds {
				for i, a := range args {
					if a == "OUT" {
						args[i] = filepath.Join(t.TempDir(), "out")
					}
				}
				_, errs, code := u.run(t, args...)
				if code != 3 || !strings.HasPrefix(errs, "veil: ") || !strings.Contains(errs, c.stderr) {
					t.Errorf("veil %s with %s damaged: exit %d, stderr %s", strings.Join(args, " "), c.what, code, errs)
				}
				out, _, code := u.run(t, append(args, "--json")...)
				if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 3 || !strings.Contains(lines[len(lines)-1], `"exit_code":3}`) {
					t.Errorf("veil %s --json with %s damaged: exit %d, stdout %s", strings.Join(args, " "), c.what, code, out)
				}
			}
		})
	}
}
