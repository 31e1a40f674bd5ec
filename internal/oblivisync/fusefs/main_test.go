package fusefs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/oblivisync"
)

// TestMain doubles as the mount helper: tests re-run this binary with OSYNC_HELPER=1 to
// get a separate mount process they can SIGTERM or SIGKILL.
func TestMain(m *testing.M) {
	if os.Getenv("OSYNC_HELPER") == "1" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

func helperMain() int {
	if trigger := os.Getenv("OSYNC_KILL_FILE"); trigger != "" {
		at, _ := strconv.Atoi(os.Getenv("OSYNC_KILL_AT"))
		oblivisync.TestOnlyAfterBackendWrite = func(_ uint64, written int) {
			if _, err := os.Stat(trigger); err == nil && written == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL) // crash at that point of an epoch
			}
		}
	}
	ttl, _ := time.ParseDuration(os.Getenv("OSYNC_LEASE_TTL"))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg := Config{
		Backend:    os.Getenv("OSYNC_BACKEND"),
		Mountpoint: os.Getenv("OSYNC_MNT"),
		Passphrase: []byte(os.Getenv("OSYNC_PASS")),
		ReadOnly:   os.Getenv("OSYNC_RO") == "1",
		// StateRoot beside the backend (temporary), never the real home directory.
		Writer: oblivisync.Options{StateDir: os.Getenv("OSYNC_STATE"), StateRoot: filepath.Join(filepath.Dir(os.Getenv("OSYNC_BACKEND")), "state-root"),
			UnsafeNoFsync: true, LeaseTTL: ttl},
		DrainTimeout: 30 * time.Second,
		Ready:        func() { fmt.Println("ready") },
		MetricsAddr:  os.Getenv("OSYNC_METRICS"),
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if err := Run(ctx, cfg); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("clean exit")
	return 0
}
