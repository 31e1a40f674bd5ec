package fusefs

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/oblivisync"
	"github.com/veil-project/veil/internal/oblivisync/osynctest"
	"github.com/veil-project/veil/internal/testutil"
)

const testPass = "fuse test passphrase"

// newBackend makes a small backend (cheap argon2id: tests only).
func newBackend(t *testing.T, files, size, k int) string {
	t.Helper()
	testutil.RequireBinary(t, "fusermount3")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testutil.Missing(t, "no /dev/fuse")
	}
	dir := filepath.Join(t.TempDir(), "backend")
	p := oblivisync.Params{Files: files, FileSize: size, K: k, DripTime: 20 * time.Millisecond}
	if err := oblivisync.Init(dir, []byte(testPass), p, oblivisync.KDF{Time: 1, MemoryKiB: 64, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mkdir(t *testing.T, name string) string {
	d := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// startMount runs a mount helper process and waits until the mount is live. Cleanup
// kills it and lazily unmounts, whatever happened.
func startMount(t *testing.T, backend, mnt, state string, ro bool, env ...string) *testutil.Process {
	t.Helper()
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", mnt).Run() })
	roFlag := "0"
	if ro {
		roFlag = "1"
	}
	args := append([]string{"OSYNC_HELPER=1", "OSYNC_BACKEND=" + backend, "OSYNC_MNT=" + mnt, "OSYNC_STATE=" + state,
		"OSYNC_PASS=" + testPass, "OSYNC_RO=" + roFlag}, env...)
	p := testutil.Start(t, "env", append(args, os.Args[0])...)
	deadline := time.After(15 * time.Second)
	for !strings.Contains("\n"+p.Output(), "\nready\n") {
		select {
		case <-p.Done():
			t.Fatalf("mount helper exited: %s", p.Output())
		case <-deadline:
			t.Fatalf("mount not ready after 15s: %s", p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p
}

// waitExit waits for the helper to exit on its own.
func waitExit(t *testing.T, p *testutil.Process, within time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(within):
		t.Fatalf("mount helper still running after %s: %s", within, p.Output())
	}
}

// eventually polls until the snapshot of dir equals want.
func eventually(t *testing.T, dir string, want map[string]string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := osynctest.Snapshot(dir)
		d := osynctest.Diff(want, got)
		if err == nil && d == "" {
			return
		}
		if time.Now().After(deadline) {
			if len(d) > 2000 {
				d = d[:2000]
			}
			t.Fatalf("%s does not match the reference after %s (err %v):\n%s", dir, within, err, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func same(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	eventually(t, dir, want, 0)
}

// TestMountsRandomWorkload: one read-write and two read-only mounts on one backend; a
// random workload (create/modify/truncate/grow/delete/rename/chmod/symlink, nested
// directories) goes to the writer and to a reference directory; once the buffer has
// drained both readers match the reference; stopping the writer drains and exits
// cleanly; a writer mounted from the backend alone (fresh journal) matches too.
func TestMountsRandomWorkload(t *testing.T) {
	be := newBackend(t, 128, 32<<10, 4)
	mnt, ro1, ro2, ref := mkdir(t, "rw"), mkdir(t, "ro1"), mkdir(t, "ro2"), mkdir(t, "ref")
	metricsAddr := testutil.Addr(testutil.FreePort(t))
	w := startMount(t, be, mnt, mkdir(t, "state"), false, "OSYNC_METRICS="+metricsAddr)
	startMount(t, be, ro1, "", true)
	startMount(t, be, ro2, "", true)

	wl := osynctest.NewWorkload(7, 40<<10)
	for i := 0; i < 150; i++ {
		if desc, err := wl.Step(osynctest.Dir(ref), osynctest.Dir(mnt)); err != nil {
			t.Fatalf("step %d (%s): %v", i, desc, err)
		}
	}
	// utimens: explicit times on a file and a directory reach the readers too.
	stamp := time.Date(2020, 2, 29, 12, 0, 0, 123456789, time.UTC)
	os.WriteFile(filepath.Join(mnt, "stamped"), []byte("t"), 0o640)
	os.WriteFile(filepath.Join(ref, "stamped"), []byte("t"), 0o640)
	os.Mkdir(filepath.Join(mnt, "stamped.d"), 0o750)
	os.Mkdir(filepath.Join(ref, "stamped.d"), 0o750)
	for _, p := range []string{"stamped", "stamped.d"} {
		if err := os.Chtimes(filepath.Join(mnt, p), stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	want, err := osynctest.Snapshot(ref)
	if err != nil {
		t.Fatal(err)
	}
	same(t, mnt, want)
	eventually(t, ro1, want, 60*time.Second)
	eventually(t, ro2, want, 10*time.Second)
	for _, p := range []string{"stamped", "stamped.d"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			info, err := os.Stat(filepath.Join(ro2, p))
			if err == nil && info.ModTime().Equal(stamp) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reader's mtime of %s: %v %v, want %v", p, info.ModTime(), err, stamp)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	if err := os.WriteFile(filepath.Join(ro1, "nope"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write on a read-only mount: %v, want EROFS", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil || st.Blocks == 0 || st.Bfree >= st.Blocks || st.Bsize != 4096 {
		t.Errorf("statfs: %+v %v", st, err)
	}

	for path, want := range map[string]string{"/healthz": "ok", "/metrics": "veil_osync_epochs_total"} {
		resp, err := http.Get("http://" + metricsAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %q lacks %q", path, body, want)
		}
	}

	w.Cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, w, 30*time.Second)
	if !strings.Contains(w.Output(), "clean exit") {
		t.Fatalf("writer did not drain and exit cleanly: %s", w.Output())
	}
	mnt2 := mkdir(t, "rw2")
	startMount(t, be, mnt2, mkdir(t, "state2"), false)
	same(t, mnt2, want)
}

// TestWriterSIGKILLMidEpoch kills the writer with SIGKILL between two backend file writes
// of an epoch, then between the superblock and the checkpoint, restarts it on the same
// journal each time, and checks nothing acknowledged was lost and the backend is
// consistent (a reader matches once drained).
func TestWriterSIGKILLMidEpoch(t *testing.T) {
	be := newBackend(t, 96, 32<<10, 4)
	mnt, ref, state := mkdir(t, "rw"), mkdir(t, "ref"), mkdir(t, "state")
	trigger := filepath.Join(t.TempDir(), "kill-now")
	wl := osynctest.NewWorkload(11, 60<<10)
	for round, killAt := range []string{"1", "2", "3", "4", "5"} { // k = 4: 5 is right after the superblock
		w := startMount(t, be, mnt, state, false, "OSYNC_KILL_FILE="+trigger, "OSYNC_KILL_AT="+killAt)
		for i := 0; i < 60; i++ {
			if desc, err := wl.Step(osynctest.Dir(ref), osynctest.Dir(mnt)); err != nil {
				t.Fatalf("round %d step %d (%s): %v", round, i, desc, err)
			}
		}
		os.WriteFile(trigger, nil, 0o600) // the next epoch dies at killAt
		waitExit(t, w, 15*time.Second)
		if w.Cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("writer was not killed: %s", w.Output())
		}
		os.Remove(trigger)
		exec.Command("fusermount3", "-u", "-z", mnt).Run()
	}
	startMount(t, be, mnt, state, false)
	want, err := osynctest.Snapshot(ref)
	if err != nil {
		t.Fatal(err)
	}
	same(t, mnt, want) // nothing acknowledged was lost
	ro := mkdir(t, "ro")
	startMount(t, be, ro, "", true)
	eventually(t, ro, want, 60*time.Second)
}

// TestMountErrors: a wrong passphrase and a tampered backend give clear errors.
func TestMountErrors(t *testing.T) {
	be := newBackend(t, 16, 16<<10, 4)
	mnt := mkdir(t, "rw")
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", mnt).Run() })
	p := testutil.Start(t, "env", "OSYNC_HELPER=1", "OSYNC_BACKEND="+be, "OSYNC_MNT="+mnt, "OSYNC_PASS=wrong", os.Args[0])
	waitExit(t, p, 15*time.Second)
	if !strings.Contains(p.Output(), "wrong passphrase") {
		t.Fatalf("wrong passphrase: got %q", p.Output())
	}

	w := startMount(t, be, mnt, mkdir(t, "state"), false)
	data := make([]byte, 20<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	os.WriteFile(filepath.Join(mnt, "f"), data, 0o644)
	w.Cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, w, 30*time.Second)
	ents, _ := os.ReadDir(be) // tamper: flip a bit in every written backend file but the superblock
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "b") {
			p := filepath.Join(be, e.Name())
			raw, _ := os.ReadFile(p)
			if raw[0] != 0 {
				raw[len(raw)-1] ^= 1
				os.WriteFile(p, raw, 0o600)
			}
		}
	}
	ro := mkdir(t, "ro")
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", ro).Run() })
	r := testutil.Start(t, "env", "OSYNC_HELPER=1", "OSYNC_BACKEND="+be, "OSYNC_MNT="+ro, "OSYNC_PASS="+testPass, "OSYNC_RO=1", "OSYNC_STATE="+t.TempDir(), os.Args[0])
	waitExit(t, r, 15*time.Second)
	if out := r.Output(); !strings.Contains(out, "integrity check failed") || !strings.Contains(out, "backend file b") {
		t.Fatalf("tampered backend: got %q", out)
	}
}

// A mountpoint inside the synced backend folder would have the sync client upload the
// plaintext view: Run refuses it before mounting (read-write and read-only alike).
func TestMountpointInsideBackendRefused(t *testing.T) {
	be := newBackend(t, 8, 8<<10, 2)
	mnt := filepath.Join(be, "view")
	os.Mkdir(mnt, 0o755)
	for _, ro := range []bool{false, true} {
		err := Run(context.Background(), Config{Backend: be, Mountpoint: mnt, Passphrase: []byte(testPass), ReadOnly: ro,
			Writer: oblivisync.Options{StateDir: t.TempDir()}})
		if !errors.Is(err, oblivisync.ErrInvalid) {
			t.Fatalf("read-only=%v: got %v, want ErrInvalid", ro, err)
		}
	}
}

// Growing a file past the backend's capacity is EFBIG through the mount, and the mount
// keeps working (it used to allocate a reference per fragment of the new size).
func TestTruncateHugeIsEFBIG(t *testing.T) {
	be := newBackend(t, 8, 8<<10, 2)
	mnt := mkdir(t, "rw")
	startMount(t, be, mnt, mkdir(t, "state"), false)
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<60); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("truncate to 2^60: got %v, want EFBIG", err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "hello" {
		t.Fatalf("after the refused truncate: %q %v", got, err)
	}
}

// Through the mount: write, unlink, keep writing and reading through the descriptor.
func TestUnlinkWhileOpenThroughMount(t *testing.T) {
	be := newBackend(t, 8, 8<<10, 2)
	mnt := mkdir(t, "rw")
	startMount(t, be, mnt, mkdir(t, "state"), false)
	p := filepath.Join(mnt, "tmp")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("hello")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" world"); err != nil {
		t.Fatalf("write after unlink: %v", err)
	}
	buf := make([]byte, 32)
	n, err := f.ReadAt(buf, 0)
	if string(buf[:n]) != "hello world" {
		t.Fatalf("read after unlink: %q %v", buf[:n], err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("name still there: %v", err)
	}
}
