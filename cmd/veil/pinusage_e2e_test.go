package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A malformed --at, --version or --snapshot (and diff's FROM and TO) is a usage mistake
// refused before the passphrase is asked for or the profile unlocked: exit 2, the message
// and the command's usage line. It was refused only after the passphrase was typed (here,
// with no passphrase to be had, the command failed for want of one, exit 1).
func TestE2EPinMistakesBeforePassphrase(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	u.mustRun(t, "put", "-q", src)
	noPass := *u
	noPass.passFile = "" // VEIL_PASSWORD_FILE empty, stdin no terminal: no passphrase at all
	badTime := `time "soon": use 2006-01-02, "2006-01-02 15:04[:05]", RFC 3339, or an age such as 90m, 36h, 7d`
	dest := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct{ args, want string }{
		{"get --at soon docs " + dest, badTime},
		{"get --version 0 docs/a.txt " + dest, "--version counts from 1"},
		{"get --snapshot 0 docs " + dest, "--snapshot counts from 1 (see 'veil snapshots')"},
		{"get --at 1d --version 1 docs/a.txt " + dest, "choose one of --at, --version and --snapshot"},
		{"get --at soon docs/a.txt -", badTime},
		{"cat --version -1 docs/a.txt", "--version counts from 1"},
		{"cat --at soon docs/a.txt", badTime},
		{"ls --at soon docs", badTime},
		{"ls --version 0 docs", "--version counts from 1"},
		{"ls --snapshot 1 --at 1d", "choose one of --at, --version and --snapshot"},
		{"diff --local " + src + " --at soon", badTime},
		{"diff soon latest", `"soon" is neither a snapshot number nor a time: ` + badTime},
		{"diff 1 0", "snapshot numbers count from 1 (see 'veil snapshots')"},
	} {
		args := strings.Fields(c.args)
		want := "veil: " + c.want + "\nusage: veil " + args[0] + " "
		_, errs, code := noPass.run(t, args...)
		if code != 2 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 2 {
			t.Errorf("veil %s: exit %d, stderr %q; want exit 2, %q... (the usage line)", c.args, code, errs, want)
		}
	}
	// Given well, the same flags still choose the point (the passphrase is read).
	if out := u.mustRun(t, "cat", "--version", "1", "docs/a.txt"); len(out) != 100 {
		t.Fatalf("cat --version 1: %d bytes", len(out))
	}
	if out := u.mustRun(t, "ls", "--at", "0m", "docs"); out != "a.txt\n" {
		t.Fatalf("ls --at 0m: %q", out)
	}
	if out := u.mustRun(t, "diff", "1", "latest"); out != "" {
		t.Fatalf("diff 1 latest: %q", out)
	}
}
