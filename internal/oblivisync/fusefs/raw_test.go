package fusefs

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/veil-project/veil/internal/oblivisync"
)

// TestNoSpaceLogged: a write refused because the pending buffer is full reaches the
// application as ENOSPC, "No space left on device", on a disk with room to spare; the
// mount's log now says why, once per burst rather than once per refused write.
func TestNoSpaceLogged(t *testing.T) {
	var log bytes.Buffer
	r := newRaw(nil, 0, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn})))
	err := fmt.Errorf("%w: pending buffer is full (1000 bytes); wait for epochs to drain it", oblivisync.ErrNoSpace)
	for range 100 {
		if st := r.errno("write", err); st != fuse.Status(syscall.ENOSPC) {
			t.Fatalf("errno %v, want ENOSPC", st)
		}
	}
	if n := strings.Count(log.String(), "\n"); n != 1 || !strings.Contains(log.String(), "pending buffer is full") || !strings.Contains(log.String(), "--max-pending") {
		t.Fatalf("log after 100 refused writes (%d lines): %q; want one line naming the full buffer", n, log.String())
	}
}
