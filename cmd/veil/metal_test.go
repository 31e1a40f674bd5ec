package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// metalServers is a Metal deployment of two 'veil metal server' processes.
type metalServers struct {
	dir  [2]string
	addr [2]string
	proc [2]*testutil.Process
}

func startMetal(t *testing.T, initArgs ...string) *metalServers {
	if len(initArgs) == 0 {
		initArgs = []string{"--files-log2", "3", "--block-size", "64", "--stash", "6", "--files-per-account", "2"}
	}
	m := &metalServers{}
	root := t.TempDir()
	for i := range m.dir {
		m.dir[i] = filepath.Join(root, "metal"+string(rune('1'+i)))
		m.addr[i] = testutil.Addr(testutil.FreePort(t))
	}
	u := &user{config: filepath.Join(root, "unused")}
	u.mustRun(t, append([]string{"metal", "server", "init", "--role", "2", "--dir", m.dir[1], "--endpoint", "https://" + m.addr[1]}, initArgs...)...)
	u.mustRun(t, "metal", "server", "init", "--role", "1", "--dir", m.dir[0], "--endpoint", "https://"+m.addr[0],
		"--peer-cred", filepath.Join(m.dir[1], "peer.cred"))
	for i := range m.dir {
		m.serve(t, i)
	}
	return m
}

func (m *metalServers) serve(t *testing.T, i int) {
	// --stall-timeout at its default: the flag is taken (it had none; role 2 ignores it).
	m.proc[i] = testutil.Start(t, veilBin, "metal", "server", "serve", "--dir", m.dir[i], "--listen", m.addr[i], "--stall-timeout", "1m")
	testutil.WaitTCP(t, m.addr[i], 20*time.Second)
}

// user is a profile (its metal.json sealed under the passphrase in passFile) that joined
// the deployment and created an account once both servers met.
func (m *metalServers) user(t *testing.T, name string) *user {
	dir := t.TempDir()
	u := &user{name: name, config: filepath.Join(dir, "profile"), passFile: filepath.Join(dir, "pass")}
	if err := os.WriteFile(u.passFile, []byte(name+"'s metal passphrase\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u.mustRun(t, "metal", "join", filepath.Join(m.dir[0], "deployment.json"))
	testutil.WaitFor(t, 60*time.Second, "the servers' 2PC link", func() bool {
		_, _, code := u.run(t, "metal", "account", "create")
		return code == 0
	})
	return u
}

// TestMetalCLI runs the README's Metal commands against two server processes: join,
// account create, write, read (to stdout and to a file), ls, a refusal for an id without a
// capability, and SIGKILL of each server between accesses losing no completed write.
func TestMetalCLI(t *testing.T) {
	m := startMetal(t)
	alice, bob := m.user(t, "alice"), m.user(t, "bob")
	var ls struct {
		Capabilities []struct{ First, Last uint64 }
	}
	if err := json.Unmarshal([]byte(alice.mustRun(t, "metal", "ls", "--json")), &ls); err != nil || len(ls.Capabilities) != 1 || ls.Capabilities[0].First != 0 || ls.Capabilities[0].Last != 1 {
		t.Fatalf("alice ls: %+v %v", ls, err)
	}
	if out := bob.mustRun(t, "metal", "ls"); strings.TrimSpace(out) != "capability\t2..3\trws" {
		t.Fatalf("bob ls: %q", out)
	}
	note := filepath.Join(t.TempDir(), "note.txt")
	os.WriteFile(note, []byte("alice's note\n"), 0o600)
	alice.mustRun(t, "metal", "write", "1", note)
	if out := alice.mustRun(t, "metal", "read", "1"); out != "alice's note\n" {
		t.Fatalf("read: %q", out)
	}
	if _, errs, code := bob.run(t, "metal", "read", "1"); code == 0 || !strings.Contains(errs, "no capability for file id 1") {
		t.Fatalf("bob reading alice's id: exit %d, %q", code, errs)
	}
	for i := range m.proc { // SIGKILL each server between accesses; the write survives
		m.proc[i].Kill()
		m.serve(t, i)
		var out string
		testutil.WaitFor(t, 60*time.Second, "a read after SIGKILL of server "+string(rune('1'+i)), func() bool {
			o, _, code := alice.run(t, "metal", "read", "1")
			out = o
			return code == 0
		})
		if out != "alice's note\n" {
			t.Fatalf("after SIGKILL of server %d: %q", i+1, out)
		}
	}
	copyPath := filepath.Join(t.TempDir(), "copy.txt")
	echo := "from stdin"
	if _, errs, code := alice.runStdin(t, echo, "metal", "write", "0", "-"); code != 0 {
		t.Fatalf("write from stdin: %s", errs)
	}
	alice.mustRun(t, "metal", "read", "0", copyPath)
	if b, _ := os.ReadFile(copyPath); string(b) != echo {
		t.Fatalf("read to file: %q", b)
	}
	if _, errs, code := alice.run(t, "metal", "write", "x", note); code == 0 || !strings.Contains(errs, `file id "x"`) {
		t.Fatalf("bad id: %q", errs)
	}
}

// runStdin is run with stdin.
func (u *user) runStdin(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(veilBin, args...)
	cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// TestServeMetal: 'veil serve --metal' runs both Metal servers beside the other services;
// a user joins its deployment file, creates an account, writes and reads.
func TestServeMetal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server")
	free := func() string { return testutil.Addr(testutil.FreePort(t)) }
	m1 := free()
	testutil.Start(t, veilBin, "serve", "--dir", dir, "--ks-listen", free(), "--ks-udp", free(), "--store-listen", free(),
		"--peekaboo-k-listen", free(), "--peekaboo-v-listen", free(), "--metal", "--metal-listen1", m1, "--metal-listen2", free(),
		"--metal-files-log2", "3", "--metal-block-size", "64")
	testutil.WaitTCP(t, m1, 30*time.Second)
	m := &metalServers{dir: [2]string{filepath.Join(dir, "metal", "1")}}
	u := m.user(t, "carol")
	if _, errs, code := u.runStdin(t, "carol's file", "metal", "write", "1", "-"); code != 0 {
		t.Fatal(errs)
	}
	if out := u.mustRun(t, "metal", "read", "1", "--json"); !strings.Contains(out, `"content":"`) {
		t.Fatalf("read --json: %q", out)
	}
	if out := u.mustRun(t, "metal", "read", "1"); out != "carol's file" {
		t.Fatalf("read: %q", out)
	}
}

// TestMetalServeStallTimeoutFlag: Server 1's stall timeout for broadcast-list downloads
// (Config.StallTimeout) is set by --stall-timeout, which --help shows with its default;
// it had no flag. A bad value is refused (exit 2). The same for --silence-timeout
// (Config.SilenceTimeout), and for --metal-silence-timeout of 'veil serve'.
func TestMetalServeStallTimeoutFlag(t *testing.T) {
	u := &user{config: filepath.Join(t.TempDir(), "unused")}
	out := u.mustRun(t, "metal", "server", "serve", "--help")
	if !strings.Contains(out, "--stall-timeout duration") || !strings.Contains(out, "takes nothing for this long is cut") || !strings.Contains(out, "(default 1m0s)") {
		t.Fatalf("serve --help does not show --stall-timeout and its default:\n%s", out)
	}
	_, errs, code := u.run(t, "metal", "server", "serve", "--dir", t.TempDir(), "--stall-timeout", "soon")
	if code != 2 || !strings.Contains(errs, `invalid argument "soon" for "--stall-timeout" flag`) {
		t.Fatalf("serve --stall-timeout soon: exit %d, %q", code, errs)
	}
	// --silence-timeout (session 17): Server 1's bound on a silent Server 2, in a call too.
	if !strings.Contains(out, "--silence-timeout duration") || !strings.Contains(out, "liveness probe for this long") || !strings.Contains(out, "(default 10s)") {
		t.Fatalf("serve --help does not show --silence-timeout and its default:\n%s", out)
	}
	_, errs, code = u.run(t, "metal", "server", "serve", "--dir", t.TempDir(), "--silence-timeout", "soon")
	if code != 2 || !strings.Contains(errs, `invalid argument "soon" for "--silence-timeout" flag`) {
		t.Fatalf("serve --silence-timeout soon: exit %d, %q", code, errs)
	}
	// --max-waiting-per-site (session 17): the bound per IPv6 /48.
	if !strings.Contains(out, "--max-waiting-per-site int") || !strings.Contains(out, "one IPv6 /48") {
		t.Fatalf("serve --help does not show --max-waiting-per-site:\n%s", out)
	}
	// 'veil serve --metal' (session 17): it ran Metal's Server 1 with the default silence
	// timeout, having no flag (internal/allinone's TestStartPassesMetalSettings: the value
	// reaches the server).
	out = u.mustRun(t, "serve", "--help")
	if !strings.Contains(out, "--metal-silence-timeout duration") || !strings.Contains(out, "liveness probe for this long") || !strings.Contains(out, "(default 10s)") {
		t.Fatalf("veil serve --help does not show --metal-silence-timeout and its default:\n%s", out)
	}
	_, errs, code = u.run(t, "serve", "--dir", t.TempDir(), "--metal-silence-timeout", "soon")
	if code != 2 || !strings.Contains(errs, `invalid argument "soon" for "--metal-silence-timeout" flag`) {
		t.Fatalf("veil serve --metal-silence-timeout soon: exit %d, %q", code, errs)
	}
}
