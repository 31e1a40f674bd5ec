package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// The end-to-end tests run the real veil binary as separate processes: servers on
// loopback, users with their own profiles, exactly as the README tells a user to.

var veilBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "veil-e2e-bin")
	if err != nil {
		panic(err)
	}
	veilBin = filepath.Join(dir, "veil")
	if out, err := exec.Command("go", "build", "-o", veilBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build veil: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// deployment is a running 'veil serve'.
type deployment struct {
	dir       string
	storeAddr string
	proc      *testutil.Process
}

func startServe(t *testing.T, users ...string) *deployment {
	t.Helper()
	d := &deployment{dir: filepath.Join(t.TempDir(), "server")}
	ks, udp, st := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	d.storeAddr = st
	args := []string{"serve", "--dir", d.dir, "--ks-listen", ks, "--ks-udp", udp, "--store-listen", st}
	args = append(args, "--peekaboo-k-listen", testutil.Addr(testutil.FreePort(t)), "--peekaboo-v-listen", testutil.Addr(testutil.FreePort(t)))
	for _, u := range users {
		args = append(args, "--user", u)
	}
	d.proc = testutil.Start(t, veilBin, args...)
	testutil.WaitTCP(t, st, 20*time.Second)
	testutil.WaitTCP(t, ks, 20*time.Second)
	for _, u := range users { // written once the servers listen
		testutil.WaitFor(t, 20*time.Second, "invitation for "+u, func() bool {
			_, err := os.Stat(filepath.Join(d.dir, "invites", u+".peekaboo"))
			return err == nil
		})
	}
	return d
}

// stats reads GET /v1/stats from the running store with the admin credential.
func (d *deployment) stats(t *testing.T) map[string]float64 {
	t.Helper()
	var cred struct{ User, Secret, CA string }
	b, err := os.ReadFile(filepath.Join(d.dir, "store", "admin.cred"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &cred)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(cred.CA))
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", "https://"+d.storeAddr+"/v1/stats", nil)
	req.SetBasicAuth(cred.User, cred.Secret)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s map[string]float64
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// user is one person's profile.
type user struct {
	name, config, passFile string
	cwd                    string // the working directory of its commands ("": the test's)
}

func newUser(t *testing.T, name string, initArgs ...string) *user {
	t.Helper()
	dir := t.TempDir()
	u := &user{name: name, config: filepath.Join(dir, "profile"), passFile: filepath.Join(dir, "pass")}
	os.WriteFile(u.passFile, []byte("passphrase of "+name+"\n"), 0o600)
	u.mustRun(t, append([]string{"init"}, initArgs...)...)
	return u
}

func (d *deployment) newUser(t *testing.T, name string) *user {
	return newUser(t, name, "--invite", filepath.Join(d.dir, "invites", name+".invite"))
}

// run executes veil as this user and returns stdout, stderr and the exit status.
func (u *user) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(veilBin, args...)
	cmd.Dir = u.cwd
	cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("veil %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

func (u *user) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := u.run(t, args...)
	if code != 0 {
		t.Fatalf("veil %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// summary runs a put or get with --json and decodes its summary. Exit status 4 (stored,
// some files without deduplication) is accepted when the summary says so.
func (u *user) summary(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, errs, code := u.run(t, append(args, "--json")...)
	var s map[string]any // the first line: a failure adds {"error": ...} after it
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&s); err != nil {
		t.Fatalf("summary of %v: %v: %q (exit %d, %s)", args, err, out, code, errs)
	}
	if fb, _ := s["fallback_files"].(float64); code != 0 && !(code == exitNoDedup && fb > 0) {
		t.Fatalf("veil %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	if fb, _ := s["fallback_files"].(float64); fb > 0 && code != exitNoDedup {
		t.Fatalf("veil %v: %v files without dedup, exit %d", args, fb, code)
	}
	return s
}

// flipLargestBlob flips one byte in the middle of the largest blob the storage service
// under dir holds (a victim file's ciphertext), which must be at least min bytes.
func flipLargestBlob(t *testing.T, dir string, min int64) {
	t.Helper()
	var victim string
	var size int64
	filepath.Walk(filepath.Join(dir, "store", "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > size {
			victim, size = p, fi.Size()
		}
		return nil
	})
	if size < min {
		t.Fatalf("no blob of the victim's size found (largest %d)", size)
	}
	b, _ := os.ReadFile(victim)
	b[len(b)/2] ^= 1
	os.WriteFile(victim, b, 0o600)
}

func randomFile(t *testing.T, path string, n int, seed byte) []byte {
	t.Helper()
	b := make([]byte, n)
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
		t.Fatalf("%s and %s differ (%v, %v)", a, b, err1, err2)
	}
}

func diffTrees(t *testing.T, a, b string) {
	t.Helper()
	out, err := exec.Command("diff", "-r", "--no-dereference", a, b).CombinedOutput()
	if err != nil {
		t.Fatalf("trees differ: %v\n%s", err, out)
	}
}

func execVeil(args ...string) ([]byte, error) {
	return exec.Command(veilBin, args...).CombinedOutput()
}
