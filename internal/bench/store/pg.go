package storebench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgProc is a PostgreSQL server started for a run: Debian's initdb and postgres (PATH or
// /usr/lib/postgresql/*/bin), trust authentication on loopback, fsync on. As root it runs
// as the postgres user (PostgreSQL refuses root).
type pgProc struct {
	url string
	cmd *exec.Cmd
}

func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", fmt.Errorf("%s not found: install Debian's postgresql (scripts/install-deps)", name)
}

func startPG(ctx context.Context, dir string) (*pgProc, error) {
	initdb, err := pgBin("initdb")
	if err != nil {
		return nil, err
	}
	postgres, err := pgBin("postgres")
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	root := filepath.Join(dir, "postgres")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root: PostgreSQL needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		for _, d := range []string{dir, root} {
			if err := os.Chmod(d, 0o711); err != nil {
				return nil, err
			}
		}
		if err := os.Chown(root, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(root, "data")
	c := exec.CommandContext(ctx, initdb, "-D", data, "-U", "veil", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := c.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := &pgProc{url: fmt.Sprintf("postgres://veil@127.0.0.1:%d/postgres?sslmode=disable", port)}
	p.cmd = exec.CommandContext(ctx, postgres, "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", root,
		"-c", "max_connections=200")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		conn, err := pgx.Connect(ctx, p.url)
		if err == nil {
			conn.Close(ctx)
			return p, nil
		}
		if i > 300 {
			p.stop()
			return nil, fmt.Errorf("postgres did not start: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop shuts the server down (SIGQUIT: immediate shutdown of every backend).
func (p *pgProc) stop() {
	p.cmd.Process.Signal(syscall.SIGQUIT)
	p.cmd.Wait()
}

// cpu is the CPU time of the postmaster and its children (backends, writers) so far.
func (p *pgProc) cpu() time.Duration {
	pm := p.cmd.Process.Pid
	t := procCPU(pm)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && ppid(pid) == pm {
			t += procCPU(pid)
		}
	}
	return t
}
