package main

import (
	"strings"
	"testing"
)

// An unknown subcommand of a command group is a usage error (exit 2, one line naming it),
// not the group's help with exit 0; the group alone still prints its help.
func TestUnknownSubcommand(t *testing.T) {
	u := &user{config: t.TempDir()}
	for _, args := range [][]string{{"store", "gcc"}, {"metal", "frob"}, {"metal", "account", "frob"}, {"osync", "frob"}, {"frob"}} {
		out, errs, code := u.run(t, args...)
		want := `unknown command "` + args[len(args)-1] + `" for "veil`
		if code != exitUsage || !strings.Contains(errs, want) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("veil %v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	out, errs, code := u.run(t, "metal", "account")
	if code != 0 || !strings.Contains(out, "Available Commands:") || errs != "" {
		t.Errorf("veil metal account: exit %d, %q %q", code, out, errs)
	}
}
