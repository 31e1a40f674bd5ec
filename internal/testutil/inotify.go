package testutil

import (
	"bytes"
	"syscall"
	"testing"
	"unsafe"
)

// WatchWrites watches the directory dir for files written in place: created (IN_CREATE)
// or modified (IN_MODIFY) under their own name, as opposed to renamed into it complete
// (IN_MOVED_TO). The returned function, called after the writes, gives "created NAME" or
// "modified NAME" for each such event so far. It skips the test where inotify is
// unavailable; the watch ends with the test.
func WatchWrites(t testing.TB, dir string) func() []string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE|syscall.IN_MODIFY|syscall.IN_MOVED_TO); err != nil {
		t.Skipf("inotify watch: %v", err)
	}
	return func() []string {
		var events []string
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if n <= 0 || err != nil {
				return events
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)], "\x00"))
				off += syscall.SizeofInotifyEvent + int(ev.Len)
				switch {
				case ev.Mask&syscall.IN_CREATE != 0:
					events = append(events, "created "+name)
				case ev.Mask&syscall.IN_MODIFY != 0:
					events = append(events, "modified "+name)
				}
			}
		}
	}
}
