package testutil

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a real PostgreSQL server (Debian's postgresql package: initdb and postgres
// from PATH or /usr/lib/postgresql/*/bin) in a temporary directory on loopback, with
// trust authentication for the user "veil". PostgreSQL refuses to run as root: under root
// the server runs as the "postgres" system user (made by the package), else "nobody".
type Postgres struct {
	URL     string // postgres://veil@127.0.0.1:port/postgres?sslmode=disable
	dir     string
	cmd     *exec.Cmd
	done    chan struct{}
	out     bytes.Buffer
	schemas atomic.Int64
}

// pgBinary finds a PostgreSQL program.
func pgBinary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1]
	}
	Missing(t, name+" not installed (run scripts/install-deps: Debian's postgresql)")
	return ""
}

// pgCredential is whom PostgreSQL runs as: nil (this user) unless this is root.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and neither the postgres nor the nobody user exists")
}

// StartPostgres starts PostgreSQL for one test (stopped when it ends). fsync stays on:
// commits are as durable as in production, which the benchmarks rely on.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	p, err := startPostgres(t)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

var shared struct {
	once sync.Once
	p    *Postgres
	err  error
}

// SharedPostgres starts one PostgreSQL for the whole test binary on first use (stop it
// with StopSharedPostgres from TestMain); tests take a schema each (NewSchema).
func SharedPostgres(t testing.TB) *Postgres {
	t.Helper()
	pgBinary(t, "initdb") // skip or fail before the Once when it is missing
	pgBinary(t, "postgres")
	shared.once.Do(func() { shared.p, shared.err = startPostgres(t) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.p
}

// StopSharedPostgres stops the server SharedPostgres started, if any.
func StopSharedPostgres() {
	if shared.p != nil {
		shared.p.Stop()
	}
}

func startPostgres(t testing.TB) (*Postgres, error) {
	initdb, postgres := pgBinary(t, "initdb"), pgBinary(t, "postgres")
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "veil-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "veil", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port := FreePort(t)
	p := &Postgres{dir: dir, done: make(chan struct{}),
		URL: fmt.Sprintf("postgres://veil@%s/postgres?sslmode=disable", Addr(port))}
	p.cmd = exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir,
		"-c", "max_connections=200", "-c", "shared_buffers=64MB")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	p.cmd.Stdout, p.cmd.Stderr = &lockedWriter{w: &p.out}, &lockedWriter{w: &p.out}
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start postgres: %v", err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := pgx.Connect(context.Background(), p.URL)
		if err == nil {
			c.Close(context.Background())
			return p, nil
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("postgres did not accept connections within 30 s: %v\n%s", err, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Stop shuts the server down (immediate shutdown: SIGQUIT) and removes its directory.
func (p *Postgres) Stop() {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	os.RemoveAll(p.dir)
}

// NewSchema creates a fresh schema and returns a URL whose connections use it, so tests
// sharing one server never see each other's tables.
func (p *Postgres) NewSchema(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d", p.schemas.Add(1))
	c, err := pgx.Connect(context.Background(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	return p.URL + "&search_path=" + name
}
