package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// A command a signal stops short exits 128 + the signal's number, as shells and scripts
// expect (130 for Ctrl-C, 143 for SIGTERM; before, 1), after its usual cleanup: its lock
// released, so the same command run again finishes the work. A server stopped by a signal
// shuts down and exits 0 (docs/scripting.md).
func TestE2EInterruptedPutExitsBySignal(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		src := filepath.Join(t.TempDir(), fmt.Sprintf("big%d", i))
		for f := range 48 {
			randomFile(t, filepath.Join(src, fmt.Sprintf("f%02d.bin", f)), 1<<20, byte(16*i+f))
		}
		before := d.stats(t)["physical_bytes"]
		cmd := exec.Command(veilBin, "put", "--json", src)
		cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		testutil.WaitFor(t, 60*time.Second, "the put's first chunks on the service", func() bool {
			return d.stats(t)["physical_bytes"] > before
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
			lastJSON(t, out.String())["exit_code"] != float64(want) {
			t.Fatalf("put given %v: exit %d, stdout %q, stderr %q; want exit %d, \"veil: interrupted\"",
				sig, code, out.String(), errb.String(), want)
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
