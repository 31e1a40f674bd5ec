package allinone

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/access"
	mserver "github.com/veil-project/veil/internal/metal/server"
	"github.com/veil-project/veil/internal/testutil"
)

// Metal's addresses and parameters are fixed at the first --metal run: a later run giving
// the same ones (or none) goes ahead, a different one is refused naming the flag, not
// silently ignored.
func TestInitMetalRefusesDifferentSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	p := access.Params{D: 3, Stash: 6, BlockSize: 64, FilesPerAccount: 2, Pack: 1, Base: 2}
	if err := InitMetal(dir, "127.0.0.1:17601", "127.0.0.1:17602", p, MetalExplicit{}); err != nil {
		t.Fatal(err)
	}
	for _, same := range []MetalExplicit{{}, {Addr1: "127.0.0.1:17601", Addr2: "127.0.0.1:17602", D: 3, BlockSize: 64}} {
		if err := InitMetal(dir, "127.0.0.1:7601", "127.0.0.1:7602", access.DefaultParams, same); err != nil {
			t.Fatalf("a later run with %+v: %v", same, err)
		}
	}
	for flag, other := range map[string]MetalExplicit{
		"--metal-listen1 127.0.0.1:17601": {Addr1: "127.0.0.1:7601"},
		"--metal-listen2 127.0.0.1:17602": {Addr2: "127.0.0.1:7602"},
		"--metal-files-log2 3":            {D: 10},
		"--metal-block-size 64":           {BlockSize: 4096},
	} {
		err := InitMetal(dir, "127.0.0.1:7601", "127.0.0.1:7602", access.DefaultParams, other)
		if err == nil || !strings.Contains(err.Error(), "set up with "+flag) {
			t.Fatalf("a later run with %+v: %v", other, err)
		}
	}
}

// 'veil serve --metal' runs Metal's servers with the run's settings (Options.Metal): the
// silence timeout was always the 10 s default there, as 'veil serve' had no flag for it
// while 'veil metal server serve' had --silence-timeout. Server 1 logs the one in force.
func TestStartPassesMetalSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if _, err := Init(dir, freeConfig(t)); err != nil {
		t.Fatal(err)
	}
	p := access.Params{D: 3, Stash: 6, BlockSize: 64, FilesPerAccount: 2, Pack: 1, Base: 2}
	a1, a2 := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	if err := InitMetal(dir, a1, a2, p, MetalExplicit{}); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d, err := Start(context.Background(), dir, Options{Logger: log, Metal: mserver.Config{SilenceTimeout: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	testutil.WaitFor(t, 10*time.Second, "metal server 1 serving", func() bool { return strings.Contains(logs.String(), `"silence timeout"=`) })
	if !strings.Contains(logs.String(), `server=metal-server1 addr=`+a1+` "silence timeout"=3s`) {
		t.Fatalf("metal server 1 does not serve with the silence timeout given:\n%s", logs.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
