package dupless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The device's copy of the newest tree root (docs/formats/put-cache.md, "The tree root
// copy"). A lone put (putlockless.go) reads root n before it builds root n+1, and its
// batch's create of n+1 then means that n was the newest, because n was stored when the
// put read it and a gap mark under n+1 outlives n by markGrace (forgetmarks.go). That
// read is not needed when this device itself stored or read root n a moment ago: it
// keeps root n's object bytes beside its put cache with the moment it proved n stored (a
// read of n began, or the batch that created n was sent), by the wall clock and by the
// kernel's boot clock (CLOCK_BOOTTIME, which counts a suspended machine's sleep and is
// not set back). A lone put in the same boot within rootCopyFresh of that moment, whose
// root memory (rootmem.go) still names that root and whose copy hashes to the
// remembered SHA-256, builds on the copy instead of a GET, and goes under the lock if its
// batch is sent later than locklessMaxAge after the copy's moment (loneTooOld): the same
// bound the read gave it. A copy that is damaged, older, of another root or not fresh is
// not used (the put reads root n, as before); it is a cache.

// rootCopyFresh is how old a root copy's moment may be for a lone put to build on it,
// leaving the put at least locklessMaxAge-rootCopyFresh to send its batch.
const rootCopyFresh = locklessMaxAge / 2

// rootCopyMagic opens a root copy file.
const rootCopyMagic = "veilrc1\x00"

// rootCopyHead is the size of a root copy's fields before the root's bytes, rootCopyTail
// the SHA-256 that closes it.
const (
	rootCopyHead = len(rootCopyMagic) + 8 + 8 + 16 + 8 + 4
	rootCopyTail = sha256.Size
)

func rootCopyPath(pc *PutCache) string { return strings.TrimSuffix(pc.Path, ".put") + ".root" }

// devClock is a moment on this device: the wall clock, and the boot clock with the boot it
// belongs to (ok false where the kernel gives neither).
type devClock struct {
	wall time.Time
	boot [16]byte
	up   time.Duration
	ok   bool
}

// deviceNow reads the device's clocks; tests replace it.
var deviceNow = func() devClock {
	d := devClock{wall: time.Now()}
	id, ok := bootID()
	var ts unix.Timespec
	if ok && unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil {
		d.boot, d.up, d.ok = id, time.Duration(ts.Nano()), true
	}
	return d
}

// bootID is the kernel's random boot id (/proc/sys/kernel/random/boot_id), read once.
var bootID = sync.OnceValues(func() ([16]byte, bool) {
	var id [16]byte
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	h, herr := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(string(b)), "-", ""))
	if err != nil || herr != nil || len(h) != len(id) {
		return id, false
	}
	copy(id[:], h)
	return id, true
})

// since reports how long ago d was, by both clocks, and whether that is known (same boot,
// neither clock behind d).
func (d devClock) since(now devClock) (time.Duration, bool) {
	if !d.ok || !now.ok || d.boot != now.boot {
		return 0, false
	}
	up, wall := now.up-d.up, now.wall.Round(0).Sub(d.wall.Round(0))
	if up < 0 || wall < 0 {
		return 0, false
	}
	return max(up, wall), true
}

// rootCopy is the content of a root copy file.
type rootCopy struct {
	seq    uint64
	at     devClock
	sealed []byte // root seq's object bytes
}

func (rc rootCopy) encode() []byte {
	b := make([]byte, 0, rootCopyHead+len(rc.sealed)+rootCopyTail)
	b = append(b, rootCopyMagic...)
	b = binary.BigEndian.AppendUint64(b, rc.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(rc.at.wall.UnixNano()))
	b = append(b, rc.at.boot[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(rc.at.up))
	b = binary.BigEndian.AppendUint32(b, uint32(len(rc.sealed)))
	b = append(b, rc.sealed...)
	h := sha256.Sum256(b)
	return append(b, h[:]...)
}

var errRootCopy = errors.New("not a tree root copy")

func decodeRootCopy(b []byte) (rootCopy, error) {
	var rc rootCopy
	if len(b) < rootCopyHead+rootCopyTail || !bytes.HasPrefix(b, []byte(rootCopyMagic)) {
		return rc, errRootCopy
	}
	body, tail := b[:len(b)-rootCopyTail], b[len(b)-rootCopyTail:]
	if h := sha256.Sum256(body); !bytes.Equal(h[:], tail) {
		return rc, errRootCopy
	}
	p := body[len(rootCopyMagic):]
	rc.seq = binary.BigEndian.Uint64(p)
	rc.at.wall = time.Unix(0, int64(binary.BigEndian.Uint64(p[8:])))
	copy(rc.at.boot[:], p[16:32])
	rc.at.up = time.Duration(binary.BigEndian.Uint64(p[32:]))
	rc.at.ok = true
	n := binary.BigEndian.Uint32(p[40:])
	if int64(n) != int64(len(p)-44) || n == 0 {
		return rc, errRootCopy
	}
	rc.sealed = p[44:]
	return rc, nil
}

// rootFromCopy returns the root this device's copy holds, and the moment it was proved
// stored, if a lone put may build on it (above); ok false sends the put to the storage.
func (c *Client) rootFromCopy(ctx context.Context) (r *treeRoot, at devClock, ok bool) {
	if c.opts.Cache == nil {
		return nil, at, false
	}
	seq, sum, seen, err := c.mem.Load()
	if err != nil || !seen {
		return nil, at, false
	}
	b, err := readLocal("tree root copy", rootCopyPath(c.opts.Cache), int64(rootCopyHead+maxRootBytes+rootCopyTail))
	if err != nil || b == nil {
		return nil, at, false
	}
	rc, err := decodeRootCopy(b)
	if err != nil || rc.seq != seq || sha256.Sum256(rc.sealed) != sum {
		return nil, at, false
	}
	if age, known := rc.at.since(deviceNow()); !known || age > rootCopyFresh {
		return nil, at, false
	}
	r, err = c.openFetchedRoot(ctx, seq, rc.sealed)
	if err != nil {
		c.log.Debug("tree root copy not used", "err", err)
		return nil, at, false
	}
	return r, rc.at, true
}

// keepRootCopy replaces this device's root copy (best effort: it is a cache). It is
// rewritten in place, not written aside and renamed (~0.7 ms here, most of a lone put's
// end): a reader that meets a copy torn by a crash or by another process writing it finds
// the closing SHA-256 wrong and reads the root from the storage instead, and a copy the
// root memory does not name is not used either.
func (c *Client) keepRootCopy(seq uint64, sealed []byte, at devClock) {
	if c.opts.Cache == nil || !at.ok || len(sealed) == 0 {
		return
	}
	if err := rewriteLocal(rootCopyPath(c.opts.Cache), rootCopy{seq: seq, at: at, sealed: sealed}.encode()); err != nil {
		c.log.Debug("keep a copy of the tree root", "err", err)
	}
}

// rewriteLocal overwrites the regular file path with b in place (made 0600 in a 0700
// folder if missing; a symlink is refused).
func rewriteLocal(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		}
	}
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Truncate(int64(len(b)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
