package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// fsType is what /proc/self/mountinfo lists for an osync mount (go-fuse's "fuse." + Name).
const fsType = "fuse.osync"

// mountEntry is one line of /proc/self/mountinfo, as far as it matters here.
type mountEntry struct {
	point, fstype, source string
}

// parseMountinfo reads the mount table (mountinfo(5)): field 5 is the mount point, with
// spaces and the like escaped as \ooo octal; after the " - " separator come the file
// system type and the source.
func parseMountinfo(path string) ([]mountEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMountinfo(f)
}

func readMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		out = append(out, mountEntry{point: unescapeOctal(fields[4]), fstype: fields[sep+1], source: fields[sep+2]})
	}
	return out, sc.Err()
}

func unescapeOctal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// prepareMountpoint refuses a mountpoint that already has a live mount (a second mount
// would hide the first) and removes a dead osync mount a crashed (SIGKILLed) run left
// there ("transport endpoint is not connected"), so the next mount just works.
func prepareMountpoint(mp string, log *slog.Logger) error {
	abs, err := filepath.Abs(mp)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(abs)
	dead := errors.Is(statErr, syscall.ENOTCONN)
	if statErr != nil && !dead {
		return fmt.Errorf("mountpoint %s: %w", mp, statErr)
	}
	if !dead {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	mounts, err := parseMountinfo("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read the mount table: %w", err)
	}
	var top *mountEntry
	for i := range mounts {
		if mounts[i].point == abs {
			top = &mounts[i] // later lines are mounted on top of earlier ones
		}
	}
	switch {
	case top == nil && dead:
		return fmt.Errorf("mountpoint %s: %w; run 'fusermount3 -u -z %s' and retry", mp, statErr, mp)
	case top == nil:
		return nil
	case !dead:
		return fmt.Errorf("%s is already a mount point (%s from %s); unmount it first (fusermount3 -u %s) or choose another directory", mp, top.fstype, top.source, mp)
	case top.fstype != fsType:
		return fmt.Errorf("mountpoint %s: dead %s mount (transport endpoint is not connected); run 'fusermount3 -u -z %s' and retry", mp, top.fstype, mp)
	}
	if out, err := exec.Command("fusermount3", "-u", "-z", abs).CombinedOutput(); err != nil {
		return fmt.Errorf("mountpoint %s: a crashed osync mount is still there and 'fusermount3 -u -z' failed (%s); remove it by hand", mp, strings.TrimSpace(string(out)))
	}
	log.Warn("removed the dead mount a crashed osync left on the mountpoint", "mountpoint", mp)
	return nil
}
