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
// and sync print what they stored so far (the summary; with --json its object): put
// printed "interrupted" alone. The files that were in flight are counted apart, "N files
// not stored: interrupted" (--json: "interrupted", their paths), not as failures: --json
// listed each in "errors" ("context canceled", "upload chunk: ..."), and an interrupted
// sync printed its summary only because of them. A server stopped by a signal shuts
// down and exits 0 (docs/scripting.md).
func TestE2EInterruptedPutExitsBySignal(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	for i, run := range []struct {
		command string
		sig     syscall.Signal
		asJSON  bool
	}{
		{"put", syscall.SIGINT, false}, // Ctrl-C: the text summary
		{"put", syscall.SIGTERM, true},
		{"sync", syscall.SIGINT, true},
		{"sync", syscall.SIGTERM, false},
	} {
		src := filepath.Join(t.TempDir(), fmt.Sprintf("big%d", i))
		for f := range 48 {
			randomFile(t, filepath.Join(src, fmt.Sprintf("f%02d.bin", f)), 1<<20, byte(16*i+f))
		}
		before := d.stats(t)["physical_bytes"]
		sig := run.sig
		args := []string{run.command, "-j", "2", src} // at most 2 files in flight: most of what arrived is whole files
		if run.asJSON {
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
		testutil.WaitFor(t, 60*time.Second, "the first files on the service", func() bool {
			// A whole file among them, and most still to come: the run takes a fraction of
			// a second, and a signal sent later (6 MiB: a loaded machine) found it done.
			return d.stats(t)["physical_bytes"] > before+3<<20
		})
		cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s given %v ran on", run.command, sig)
		}
		want := 128 + int(sig)
		if code := cmd.ProcessState.ExitCode(); code != want || errb.String() != "veil: interrupted\n" ||
			run.asJSON && lastJSON(t, out.String())["exit_code"] != float64(want) {
			t.Fatalf("%s given %v: exit %d, stdout %q, stderr %q; want exit %d, \"veil: interrupted\"",
				run.command, sig, code, out.String(), errb.String(), want)
		}
		// The summary counts the files the interrupted run stored, those its snapshot lists,
		// and apart from them those it left in flight.
		listed := u.mustRun(t, "ls", filepath.Base(src))
		stored, left := -1, -1
		var leftPaths []string
		if run.asJSON {
			type summary struct {
				Files       *int
				Errors      []any
				Interrupted []struct{ Path string }
			}
			var s struct {
				summary
				Put *summary
			}
			if err := json.NewDecoder(&out).Decode(&s); err == nil {
				if s.Put != nil { // sync's result holds put's summary
					s.summary = *s.Put
				}
				if s.Files != nil && len(s.Errors) == 0 {
					stored, left = *s.Files, len(s.Interrupted)
				}
				for _, f := range s.Interrupted {
					leftPaths = append(leftPaths, f.Path)
				}
			}
		} else if line, ok := strings.CutPrefix(out.String(), "stored "); ok && strings.Count(line, "\n") == 1 {
			fmt.Sscanf(line, "%d files", &stored)
			if _, rest, ok := strings.Cut(line, "; "); ok {
				for part := range strings.SplitSeq(strings.TrimSuffix(rest, "\n"), "; ") {
					if n, ok := strings.CutSuffix(part, " files not stored: interrupted"); ok {
						fmt.Sscanf(n, "%d", &left)
					} else if part == "1 file not stored: interrupted" {
						left = 1
					}
				}
			}
		}
		if stored != strings.Count(listed, "\n") || left < 1 || stored+left > 48 {
			t.Fatalf("%s given %v: stdout %q; want the summary of the %d files it stored first, and of those in flight apart, not as errors",
				run.command, sig, out.String(), strings.Count(listed, "\n"))
		}
		for _, p := range leftPaths {
			if filepath.Dir(p) != src || strings.Contains(listed, filepath.Base(p)) {
				t.Fatalf("%s given %v lists %s as interrupted; stored: %q", run.command, sig, p, listed)
			}
		}
		if got := d.stats(t)["physical_bytes"] - before; got >= 48<<20 {
			t.Fatalf("%s given %v had stored everything (%v bytes): not interrupted mid-way", run.command, sig, got)
		}
		u.mustRun(t, run.command, "-q", src) // the lock is free, the rerun finishes
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
