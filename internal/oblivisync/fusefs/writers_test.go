package fusefs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/oblivisync"
	"github.com/veil-project/veil/internal/testutil"
)

// tryMount runs a mount helper; it returns the process once the mount is live, or nil
// and the helper's output if the helper exited first.
func tryMount(t *testing.T, backend, mnt, state string, env ...string) (*testutil.Process, string) {
	t.Helper()
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", mnt).Run() })
	args := append([]string{"OSYNC_HELPER=1", "OSYNC_BACKEND=" + backend, "OSYNC_MNT=" + mnt, "OSYNC_STATE=" + state,
		"OSYNC_PASS=" + testPass, "OSYNC_RO=0"}, env...)
	p := testutil.Start(t, "env", append(args, os.Args[0])...)
	deadline := time.After(15 * time.Second)
	for !strings.Contains("\n"+p.Output(), "\nready\n") {
		select {
		case <-p.Done():
			return nil, p.Output()
		case <-deadline:
			t.Fatalf("mount neither ready nor refused after 15s: %s", p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p, ""
}

// mountRefused runs a read-write mount helper that must refuse to start, and returns
// what it printed.
func mountRefused(t *testing.T, backend, mnt, state string, env ...string) string {
	t.Helper()
	p, out := tryMount(t, backend, mnt, state, env...)
	if p != nil {
		t.Fatalf("a writer with state %s mounted, want it refused", state)
	}
	return out
}

// stop sends SIGTERM and requires a drained, clean exit.
func stop(t *testing.T, p *testutil.Process) {
	t.Helper()
	p.Cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, p, 60*time.Second)
	if !strings.Contains(p.Output(), "clean exit") {
		t.Fatalf("writer did not drain and exit cleanly: %s", p.Output())
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readIs(t *testing.T, path, want string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != want {
		t.Fatalf("%s: %q %v, want %q", path, got, err, want)
	}
}

// Issue 17 item 2, and the hand-over between two machines (state directories A and B):
// A writes v1 and stops; B takes over, writes v2 and stops; A, mounted again, used to
// show v1, commit it and revert B's synced data for every reader. A now refuses with a
// line saying how to proceed; after `adopt` it shows v2 and goes on from there.
func TestHandOverBetweenMachines(t *testing.T) {
	be := newBackend(t, 32, 16<<10, 3)
	stA, stB, mA, mB := mkdir(t, "stateA"), mkdir(t, "stateB"), mkdir(t, "mntA"), mkdir(t, "mntB")
	a := startMount(t, be, mA, stA, false)
	writeFile(t, filepath.Join(mA, "file.txt"), "v1 from A")
	stop(t, a)

	b := startMount(t, be, mB, stB, false)
	readIs(t, filepath.Join(mB, "file.txt"), "v1 from A")
	writeFile(t, filepath.Join(mB, "file.txt"), "v2 from B")
	stop(t, b)

	out := mountRefused(t, be, mA, stA)
	if !strings.Contains(out, "veil osync adopt") || !strings.Contains(out, "behind the backend") {
		t.Fatalf("stale writer refused without saying how to proceed: %s", out)
	}
	rep, err := oblivisync.Adopt(be, []byte(testPass), stA, "")
	if err != nil || rep.SetAside == "" {
		t.Fatalf("adopt: %+v %v", rep, err)
	}
	a = startMount(t, be, mA, stA, false)
	readIs(t, filepath.Join(mA, "file.txt"), "v2 from B")
	writeFile(t, filepath.Join(mA, "file.txt"), "v3 from A")
	stop(t, a)
	ro := mkdir(t, "ro")
	startMount(t, be, ro, mkdir(t, "ro-state"), true)
	readIs(t, filepath.Join(ro, "file.txt"), "v3 from A")
}

// Issue 17 items 2 and 3: while a writer runs, a second writer (another state directory)
// used to start, remove the first one's in-flight temp files as "stale" (killing it with
// "rename ... no such file or directory") and overwrite its fragments. The backend's lease
// now refuses it, however often it tries, and the first writer carries on to a clean,
// drained exit with everything written.
func TestSecondWriterRefusedWhileFirstRuns(t *testing.T) {
	be := newBackend(t, 64, 16<<10, 4)
	mA, stA := mkdir(t, "mntA"), mkdir(t, "stateA")
	a := startMount(t, be, mA, stA, false)
	want := map[string]string{}
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("f%d", i)
		content := strings.Repeat(fmt.Sprintf("%d", i), 40<<10) // epochs busy with temp files
		writeFile(t, filepath.Join(mA, name), content)
		want[name] = content
		out := mountRefused(t, be, mkdir(t, fmt.Sprintf("mntB%d", i)), mkdir(t, fmt.Sprintf("stateB%d", i)))
		if !strings.Contains(out, "leased to another writer") {
			t.Fatalf("second writer refused for the wrong reason: %s", out)
		}
		select {
		case <-a.Done():
			t.Fatalf("first writer died after a second one tried to start: %s", a.Output())
		default:
		}
	}
	stop(t, a)
	ro := mkdir(t, "ro")
	startMount(t, be, ro, mkdir(t, "ro-state"), true)
	for name, content := range want {
		readIs(t, filepath.Join(ro, name), content)
	}
}

// A writer killed with SIGKILL leaves its lease behind. Its own state directory takes it
// over at once (TestWriterSIGKILLMidEpoch); another machine is refused until the lease is
// older than its TTL, then takes over, and the crashed machine's state is then behind.
func TestCrashedWritersLeaseTakenOver(t *testing.T) {
	be := newBackend(t, 32, 16<<10, 3)
	stA, stB, mA, mB := mkdir(t, "stateA"), mkdir(t, "stateB"), mkdir(t, "mntA"), mkdir(t, "mntB")
	ttl := "OSYNC_LEASE_TTL=4s"
	a := startMount(t, be, mA, stA, false, ttl)
	writeFile(t, filepath.Join(mA, "synced.txt"), "from A")
	ro := mkdir(t, "ro")
	startMount(t, be, ro, mkdir(t, "ro-state"), true)
	testutil.WaitFor(t, 30*time.Second, "reader sees A's file", func() bool {
		got, err := os.ReadFile(filepath.Join(ro, "synced.txt"))
		return err == nil && string(got) == "from A"
	})
	a.Kill()
	exec.Command("fusermount3", "-u", "-z", mA).Run()

	if out := mountRefused(t, be, mB, stB, ttl); !strings.Contains(out, "leased to another writer") {
		t.Fatalf("lease of the crashed writer not honoured: %s", out)
	}
	var b *testutil.Process
	testutil.WaitFor(t, 60*time.Second, "second machine takes over the expired lease", func() bool {
		b, _ = tryMount(t, be, mB, stB, ttl)
		return b != nil
	})
	readIs(t, filepath.Join(mB, "synced.txt"), "from A")
	writeFile(t, filepath.Join(mB, "synced.txt"), "from B")
	stop(t, b)
	if out := mountRefused(t, be, mA, stA, ttl); !strings.Contains(out, "veil osync adopt") {
		t.Fatalf("crashed machine's state not refused after the take-over: %s", out)
	}
}
