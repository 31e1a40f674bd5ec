package fuseunmount

import (
	"errors"
	"log/slog"
	"os/exec"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Unmount detaches srv's mount at mp, falling back to a lazy unmount when it is busy (a
// file open, a shell's working folder in it), and waits up to 10 s for served (closed
// when srv.Wait returns) so the mount's last requests are answered. A busy mount goes on
// serving its open files after the lazy unmount, until they close or the process exits.
func Unmount(srv *fuse.Server, mp string, served <-chan struct{}, log *slog.Logger) {
	select {
	case <-served:
		return
	default:
	}
	for i := 0; i < 5; i++ {
		if err := srv.Unmount(); err == nil {
			break
		} else if i == 4 {
			log.Warn("unmount busy; detaching lazily", "err", err)
			if out, err := exec.Command("fusermount3", "-u", "-z", mp).CombinedOutput(); err != nil {
				log.Error("lazy unmount failed", "err", errors.New(string(out)))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
	}
}
