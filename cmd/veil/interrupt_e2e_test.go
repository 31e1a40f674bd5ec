package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// A command a signal stops short exits 128 + the signal's number, as shells and scripts
// expect (130 for Ctrl-C, 143 for SIGTERM; before, 1), after its usual cleanup: its lock
// released, so the same command run again finishes the work. Before "interrupted" put
// prints what it stored so far, as sync does (the summary; with --json its object): it
// printed "interrupted" alone. A server stopped by a signal shuts down and exits 0
// (docs/scripting.md).
func TestE2EInterruptedPutExitsBySignal(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		src := filepath.Join(t.TempDir(), fmt.Sprintf("big%d", i))
		for f := range 48 {
			randomFile(t, filepath.Join(src, fmt.Sprintf("f%02d.bin", f)), 1<<20, byte(16*i+f))
		}
		before := d.stats(t)["physical_bytes"]
		asJSON := sig == syscall.SIGTERM        // Ctrl-C: the text summary
		args := []string{"put", "-j", "2", src} // at most 2 files in flight: most of what arrived is whole files
		if asJSON {
			args = append(args, "--json")
		}
		cmd := exec.Command(veilBin, args...)
		cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		testutil.WaitFor(t, 60*time.Second, "the put's first files on the service", func() bool {
			return d.stats(t)["physical_bytes"] > before+6<<20 // whole files among them
		})
		cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("put given %v ran on", sig)
		}
		want := 128 + int(sig)
		if code := cmd.ProcessState.ExitCode(); code != want || errb.String() != "veil: interrupted\n" ||
			asJSON && lastJSON(t, out.String())["exit_code"] != float64(want) {
			t.Fatalf("put given %v: exit %d, stdout %q, stderr %q; want exit %d, \"veil: interrupted\"",
				sig, code, out.String(), errb.String(), want)
		}
		// The summary counts the files the interrupted put stored: those its snapshot lists.
		listed := strings.Count(u.mustRun(t, "ls", filepath.Base(src)), "\n")
		stored := -1
		if asJSON {
			var s struct{ Files *int }
			if err := json.NewDecoder(&out).Decode(&s); err == nil && s.Files != nil {
				stored = *s.Files
			}
		} else if line, ok := strings.CutPrefix(out.String(), "stored "); ok && strings.Count(line, "\n") == 1 {
			fmt.Sscanf(line, "%d files", &stored)
		}
		if stored != listed || stored >= 48 {
			t.Fatalf("put given %v: stdout %q; want the summary of the %d files it stored first", sig, out.String(), listed)
		}
		if got := d.stats(t)["physical_bytes"] - before; got >= 48<<20 {
			t.Fatalf("put given %v had stored everything (%v bytes): not interrupted mid-way", sig, got)
		}
		u.mustRun(t, "put", "-q", src) // the lock is free, the rerun finishes
		dst := t.TempDir()
		u.mustRun(t, "get", "-q", filepath.Base(src), dst)
		diffTrees(t, src, filepath.Join(dst, filepath.Base(src)))
	}
	d.proc.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.proc.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("veil serve did not exit on SIGTERM")
	}
	if code := d.proc.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("veil serve stopped by SIGTERM exited %d, want 0:\n%s", code, d.proc.Output())
	}
}
