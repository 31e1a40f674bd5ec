package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/oblivisync"
	"github.com/veil-project/veil/internal/storage"
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

// The stderr line escapes a name's control characters in place (a newline in a name is
// \n, not a second line nor "; "), while the errors errors.Join put on lines of their own
// still read "; ", also under withExit; --json's error text keeps the name as it is.
func TestTextMessageEscapesNames(t *testing.T) {
	name := fmt.Errorf("docs/evil\nveil: forged \x1b[2J: %w", errors.New("not found"))
	for _, c := range []struct {
		err        error
		text, json string
	}{
		{name, `docs/evil\nveil: forged \033[2J: not found`, "docs/evil; veil: forged \x1b[2J: not found"},
		{withExit(errors.Join(name, errors.New("b\tc")), 3), `docs/evil\nveil: forged \033[2J: not found; b\tc`, "docs/evil; veil: forged \x1b[2J: not found; b c"},
		{fmt.Errorf("metal: %w", errors.Join(errors.New("server 1 down"), errors.New("server 2 down"))), "metal: server 1 down; server 2 down", "metal: server 1 down; server 2 down"},
	} {
		if got := textMessage(c.err); got != c.text {
			t.Errorf("textMessage(%q) = %q, want %q", c.err, got, c.text)
		}
		if got := errorMessage(c.err); got != c.json {
			t.Errorf("errorMessage(%q) = %q, want %q", c.err, got, c.json)
		}
	}
}

// Damage (any error wrapping verr.ErrIntegrity: dupless's records, roots, bases, kept
// versions and chunks, the storage service's, ObliviSync's, Peekaboo's) exits 3 from
// every command; a status a command chose itself (find's 2) stays.
func TestExitCodeOfDamage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("notes.txt: %w: truncated", dupless.ErrRecord), exitDamage},
		{fmt.Errorf("%w: tree root 4: its tree base x is missing", dupless.ErrIntegrity), exitDamage},
		{fmt.Errorf("forgot 3 snapshots; prune: %w", fmt.Errorf("x: %w", storage.ErrIntegrity)), exitDamage},
		{fmt.Errorf("osync: %w", oblivisync.ErrIntegrity), exitDamage},
		{withExit(fmt.Errorf("find: %w", dupless.ErrRecord), exitFindFailed), exitFindFailed},
		{fmt.Errorf("x: %w", storage.ErrNotFound), 1},
		{dupless.ErrForeignKey, 1},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%q) = %d, want %d", c.err, got, c.want)
		}
	}
}

// A missing required flag is a usage mistake (exit 2 with the usage line), as an unknown
// one is; so is naming neither --dir nor --url for a store admin command. Found deploying:
// both exited 1, as a failure of the work would.
func TestMissingRequiredFlag(t *testing.T) {
	u := &user{config: t.TempDir()}
	for _, c := range []struct {
		args  []string
		usage string
	}{
		{[]string{"store", "serve"}, "\nusage: veil store serve --dir DIR"},
		{[]string{"store", "init"}, "\nusage: veil store init --dir DIR"},
		{[]string{"keyserver", "client", "add", "bob"}, "\nusage: veil keyserver client add"},
		{[]string{"store", "gc"}, ""},
		{[]string{"store", "user", "list"}, ""},
	} {
		out, errs, code := u.run(t, c.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errs, "veil: ") || !strings.Contains(errs, c.usage) || strings.Count(errs, "\n") > 2 {
			t.Errorf("veil %v: exit %d, stdout %q, stderr %q", c.args, code, out, errs)
		}
	}
}

// A number or switch flag given something else says what it wants, in one line and a
// usage line, exit 2; it said strconv's words (`invalid argument "abc" for "--version"
// flag: strconv.ParseInt: parsing "abc": invalid syntax`; found by a user walkthrough).
func TestFlagValueSaysWhatItWants(t *testing.T) {
	u := &user{config: t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cat", "--version", "abc", "f"}, "veil: --version abc: want a whole number\n"},
		{[]string{"ls", "--snapshot", "-1"}, "veil: --snapshot -1: want a whole number, not negative\n"},
		{[]string{"get", "--version", "99999999999999999999", "f"}, "veil: --version 99999999999999999999: out of range\n"},
		{[]string{"put", "--json=maybe", "f"}, "veil: --json maybe: want true or false\n"},
	} {
		out, errs, code := u.run(t, c.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errs, c.want+"usage: veil ") || strings.Count(errs, "\n") != 2 {
			t.Errorf("veil %v: exit %d, stdout %q, stderr %q; want exit 2, %q and the usage line", c.args, code, out, errs, c.want)
		}
	}
}
