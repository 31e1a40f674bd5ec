package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runVeil runs the CLI in-process and returns stdout and the error.
func runVeil(t *testing.T, args ...string) (string, error) {
	t.Helper()
	r, w, _ := os.Pipe()
	old := os.Stdout
	os.Stdout = w
	root := newRootCommand()
	root.SetArgs(args)
	err := root.Execute()
	w.Close()
	os.Stdout = old
	var out bytes.Buffer
	io.Copy(&out, r)
	return out.String(), err
}

// TestOsyncCommands: init, sync and status end to end (FUSE mounts are tested in
// internal/oblivisync/fusefs), plus the wrong-passphrase message.
func TestOsyncCommands(t *testing.T) {
	be := filepath.Join(t.TempDir(), "be")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	// One convention with the DupLESS commands: the variables name files (issue 15 item 17).
	passDir := t.TempDir()
	setPass := func(env, p string) {
		f := filepath.Join(passDir, env)
		os.WriteFile(f, []byte(p+"\n"), 0o600)
		t.Setenv(env, f)
	}
	setPass("VEIL_PASSWORD_FILE", "cli test")
	out, err := runVeil(t, "osync", "init", "--backend", be, "--files", "16", "--file-size", "8192", "--kdf-memory", "8", "--kdf-time", "1")
	if err != nil || !strings.Contains(out, "created osync backend "+be+": 16 files of 8.0 KiB") || !strings.Contains(out, "veil osync mount") {
		t.Fatalf("init says what it did: %q %v", out, err)
	}
	if _, err := runVeil(t, "osync", "init", "--backend", be); err == nil || !strings.Contains(err.Error(), "already an osync backend") {
		t.Fatalf("second init: %v", err)
	}
	// Flag values that would run nothing, or contradict each other, are usage mistakes.
	for _, bad := range [][]string{{"--epochs", "0"}, {"--drain", "--epochs", "3"}, {"--drain", "--max-epochs", "0"}} {
		if _, err := runVeil(t, append([]string{"osync", "sync", "--backend", be}, bad...)...); err == nil || exitCode(err) != exitUsage {
			t.Fatalf("sync %v: %v, want a usage mistake (exit 2)", bad, err)
		}
	}
	out, err = runVeil(t, "osync", "sync", "--backend", be, "--epochs", "3")
	if err != nil || !strings.Contains(out, "epoch 3:") {
		t.Fatalf("sync: %q %v", out, err)
	}
	checkSyncJSON(t, be)
	out, err = runVeil(t, "osync", "status", "--backend", be)
	if err != nil || !strings.Contains(out, "epoch     5") || !strings.Contains(out, "16 files x 8.0 KiB") ||
		!strings.Contains(out, "buffer    0 B pending in 0 files") || strings.Contains(out, "e+") {
		t.Fatalf("status: %q %v", out, err)
	}
	ents, _ := os.ReadDir(be)
	if len(ents) != 18 { // 16 files, super, osync.key
		t.Fatalf("backend has %d entries", len(ents))
	}
	// A backend folder that does not exist (a share not mounted) is not called "not an
	// osync backend (run 'veil osync init')": an init there would start an empty backend.
	if _, err := runVeil(t, "osync", "status", "--backend", be+"-missing"); err == nil || !strings.Contains(err.Error(), "backend folder "+be+"-missing does not exist (a share not mounted") {
		t.Fatalf("status of a missing folder: %v", err)
	}
	setPass("VEIL_PASSWORD_FILE", "wrong")
	if _, err := runVeil(t, "osync", "status", "--backend", be); err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("wrong passphrase: %v", err)
	}
	// passwd: refused with a wrong current passphrase; afterwards only the new one opens.
	setPass("VEIL_NEW_PASSWORD_FILE", "cli test 2")
	if _, err := runVeil(t, "osync", "passwd", "--backend", be); err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("passwd with a wrong passphrase: %v", err)
	}
	setPass("VEIL_PASSWORD_FILE", "cli test")
	if _, err := runVeil(t, "osync", "passwd", "--backend", be); err != nil {
		t.Fatal(err)
	}
	if _, err := runVeil(t, "osync", "status", "--backend", be); err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("old passphrase after passwd: %v", err)
	}
	setPass("VEIL_PASSWORD_FILE", "cli test 2")
	if out, err := runVeil(t, "osync", "status", "--backend", be); err != nil || !strings.Contains(out, "epoch     5") {
		t.Fatalf("status with the new passphrase: %q %v", out, err)
	}
	if ents, _ := os.ReadDir(be); len(ents) != 18 {
		t.Fatalf("backend has %d entries after passwd", len(ents))
	}
}

// checkSyncJSON pins the shape of `osync sync --json`: one object per epoch with the
// snake_case names `status --json` uses (it printed Go's field names: Epoch, FragsSynced,
// PendingBytes, Duration), and the status's pending_* names for the same quantities. A name
// both print means the same thing in both: sync's list of the backend files an epoch
// rewrote was "files", status's number of backend files N (found by a user walkthrough).
func checkSyncJSON(t *testing.T, be string) {
	t.Helper()
	out, err := runVeil(t, "osync", "sync", "--backend", be, "--epochs", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("sync --epochs 2 --json printed %d lines: %q", len(lines), out)
	}
	want := []string{"bytes_synced", "bytes_written", "duration_ns", "epoch", "files_rewritten", "fragments_synced",
		"inodes_committed", "pending_bytes", "pending_fragments", "pending_inodes"}
	var last map[string]any
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v: %q", i, err, line)
		}
		if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, want) {
			t.Fatalf("sync --json fields %q, want %q", keys, want)
		}
		files, _ := m["files_rewritten"].([]any)
		if m["epoch"] != float64(4+i) || len(files) == 0 || m["bytes_written"] != float64((len(files)+1)*8192) {
			t.Fatalf("sync --json epoch %d: %s", 4+i, line)
		}
		last = m
	}
	st, err := runVeil(t, "osync", "status", "--backend", be, "--json")
	if err != nil || !strings.Contains(st, `"pending_bytes":`) || !strings.Contains(st, `"pending_fragments":`) || !strings.Contains(st, `"epoch":5`) {
		t.Fatalf("status --json: %q %v", st, err)
	}
	var status map[string]any
	if err := json.Unmarshal([]byte(st), &status); err != nil {
		t.Fatalf("status --json: %v: %q", err, st)
	}
	writer, _ := status["writer"].(map[string]any)
	for name, v := range last {
		for _, in := range []map[string]any{status, writer} {
			if w, ok := in[name]; ok && fmt.Sprintf("%T", w) != fmt.Sprintf("%T", v) {
				t.Errorf("%q is %v in sync --json, %v in status --json: one name, two meanings", name, v, w)
			}
		}
	}
}

// TestOsyncAdoptCommand runs the binary: a writer state overtaken by another writer (two
// machines, here two --state directories) is refused with a line naming 'veil osync
// adopt'; adopt sets its journal aside and says so; a state that is not behind is not
// adopted.
func TestOsyncAdoptCommand(t *testing.T) {
	be, s1, s2 := filepath.Join(t.TempDir(), "be"), t.TempDir(), t.TempDir()
	pf := filepath.Join(t.TempDir(), "pass")
	os.WriteFile(pf, []byte("cli test\n"), 0o600)
	run := func(args ...string) (string, error) {
		out, err := execVeil(append(args, "--backend", be, "--passphrase-file", pf)...)
		return string(out), err
	}
	if out, err := run("osync", "init", "--files", "16", "--file-size", "8192", "--kdf-memory", "8", "--kdf-time", "1"); err != nil {
		t.Fatalf("init: %s %v", out, err)
	}
	for _, st := range []string{s1, s2, s2} {
		if out, err := run("osync", "sync", "--state", st, "--epochs", "2"); err != nil {
			t.Fatalf("sync %s: %s %v", st, out, err)
		}
	}
	out, err := run("osync", "sync", "--state", s1)
	if err == nil || !strings.Contains(out, "behind the backend") || !strings.Contains(out, "veil osync adopt") {
		t.Fatalf("overtaken state: %q %v", out, err)
	}
	if out, err := run("osync", "adopt", "--state", s2); err == nil || !strings.Contains(out, "not behind") {
		t.Fatalf("adopt of a current state: %q %v", out, err)
	}
	out, err = run("osync", "adopt", "--state", s1)
	if err != nil || !strings.Contains(out, "now follows the backend at epoch 6") || !strings.Contains(out, "set aside, not applied") {
		t.Fatalf("adopt: %q %v", out, err)
	}
	if out, err := run("osync", "sync", "--state", s1); err != nil || !strings.Contains(out, "epoch 7:") {
		t.Fatalf("sync after adopt: %q %v", out, err)
	}
}
