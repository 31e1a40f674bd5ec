package oblivisync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/chacha20poly1305"
)

// journal is the writer's local append-only log of pending changes, in segment files
// "NNNNNNNN.log". Each record is one batch of operations applied atomically:
//
//	length u32 | nonce [24] | XChaCha20-Poly1305(plaintext, aad = "veil-osync-journal-v1" | seg u32 | offset u64)
//
// A torn record at the very end of the last segment (a crash mid-append) is cut off on
// replay; a bad record anywhere else is an integrity error.
type journal struct {
	dir   string
	key   [32]byte
	fsync bool
	limit int64 // the writer's MaxPending; sizes segments
	// readOnly: replay only reads (status of a stopped writer); no segment is opened for
	// appending or cut.
	readOnly bool

	seg      uint32
	f        *os.File
	off      int64
	unsynced bool
	size     int64 // bytes in all segments

	// failed holds the first fsync error; every later sync and append returns it. A retry
	// cannot make the records durable: after a failed fsync Linux may drop the dirty pages
	// and report success to the next fsync (PostgreSQL's "fsyncgate"). Only a restart,
	// which replays the journal, recovers. syncMu serialises fsyncs: an epoch fsyncs a
	// segment outside the writer's lock, and of two concurrent fsyncs only one may see
	// the error. failed is atomic so that appends never wait for an fsync.
	syncMu   sync.Mutex
	failed   atomic.Pointer[error]
	syncFile func(*os.File) error // (*os.File).Sync when nil; tests make it fail

	readers map[uint32]*os.File
	rcSeg   uint32
	rcOff   int64
	rcPlain []byte
}

const (
	segMax = 64 << 20
	// maxRecord bounds one record: a whole fragment image of the largest block size init
	// accepts (1 GiB) and its framing. Found by review: at 8 MiB, images of fragments
	// over 8 MiB (block sizes over ~17 MiB, or compaction) were written but then read as
	// a torn tail (dropped, with the writes in them) or as corruption (the journal
	// unreadable). A record's length is also checked against its file before anything
	// is allocated for it.
	maxRecord     = 1<<30 + 1<<20
	journalAADTag = "veil-osync-journal-v1"
)

// segMax is the segment size: a sixteenth of the pending limit, between 64 KiB and 64 MiB.
func (j *journal) segMax() int64 { return min(max(j.limit/16, 64<<10), segMax) }

func segName(s uint32) string { return fmt.Sprintf("%08d.log", s) }

func journalAAD(seg uint32, off int64) []byte {
	b := append([]byte(journalAADTag), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(journalAADTag):], seg)
	binary.BigEndian.PutUint64(b[len(journalAADTag)+4:], uint64(off))
	return b
}

// listSegments returns the segment numbers present, ascending.
func listSegments(dir string) ([]uint32, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []uint32
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(n, 10, 32)
		if err == nil {
			segs = append(segs, uint32(v))
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i] < segs[j] })
	return segs, nil
}

// replay calls fn for every record at or after (seg, off), in order, then leaves the
// journal open for appending at the end of the last segment.
func (j *journal) replay(seg uint32, off int64, fn func(seg uint32, off int64, plain []byte) error) error {
	segs, err := listSegments(j.dir)
	if err != nil {
		return err
	}
	j.readers = map[uint32]*os.File{}
	j.seg, j.off = seg, off
	for i, s := range segs {
		st, err := os.Stat(filepath.Join(j.dir, segName(s)))
		if err != nil {
			return err
		}
		j.size += st.Size()
		if s < seg {
			continue
		}
		start := int64(0)
		if s == seg {
			start = off
		}
		end, err := j.replaySegment(s, start, i == len(segs)-1, fn)
		if err != nil {
			return err
		}
		j.seg, j.off = s, end
	}
	if j.readOnly {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(j.dir, segName(j.seg)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(j.off); err != nil { // cut a torn tail
		f.Close()
		return err
	}
	j.f = f
	// A writer killed before its fsync leaves records in the page cache only: fsync them
	// before a checkpoint refers to them.
	j.unsynced = j.off > 0
	return nil
}

func (j *journal) replaySegment(s uint32, off int64, last bool, fn func(uint32, int64, []byte) error) (int64, error) {
	f, err := os.Open(filepath.Join(j.dir, segName(s)))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	for off < st.Size() {
		plain, n, err := j.readRecordFrom(f, s, off)
		if err != nil {
			if last && isTail(f, off, st.Size()) {
				return off, nil // torn tail from a crash mid-append: drop it
			}
			return 0, fmt.Errorf("journal %s offset %d: %w", segName(s), off, err)
		}
		if err := fn(s, off, plain); err != nil {
			return 0, fmt.Errorf("journal %s offset %d: %w", segName(s), off, err)
		}
		off += n
	}
	return off, nil
}

// isTail reports whether the record at off is the last one in a file of the given size
// (its header is cut short, or it claims to reach or pass the end).
func isTail(f *os.File, off, size int64) bool {
	var hdr [4]byte
	if size-off < 4 {
		return true
	}
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return true
	}
	return off+4+int64(binary.BigEndian.Uint32(hdr[:])) >= size
}

func (j *journal) readRecordFrom(f *os.File, seg uint32, off int64) ([]byte, int64, error) {
	var hdr [4]byte
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return nil, 0, fmt.Errorf("%w: truncated record header", ErrIntegrity)
	}
	n := int64(binary.BigEndian.Uint32(hdr[:]))
	if n < chacha20poly1305.NonceSizeX+chacha20poly1305.Overhead || n > maxRecord {
		return nil, 0, fmt.Errorf("%w: bad record length %d", ErrIntegrity, n)
	}
	if st, err := f.Stat(); err == nil && off+4+n > st.Size() {
		return nil, 0, fmt.Errorf("%w: truncated record", ErrIntegrity)
	}
	buf := make([]byte, 4+n)
	if _, err := f.ReadAt(buf, off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("%w: truncated record", ErrIntegrity)
		}
		return nil, 0, err
	}
	plain, err := openRecord(&j.key, seg, off, buf)
	return plain, 4 + n, err
}

// openRecord authenticates one whole framed record (length prefix included).
func openRecord(key *[32]byte, seg uint32, off int64, rec []byte) ([]byte, error) {
	const min = 4 + chacha20poly1305.NonceSizeX + chacha20poly1305.Overhead
	if len(rec) < min || int(binary.BigEndian.Uint32(rec)) != len(rec)-4 {
		return nil, fmt.Errorf("%w: bad record framing", ErrIntegrity)
	}
	aead, _ := chacha20poly1305.NewX(key[:])
	nonce := rec[4 : 4+chacha20poly1305.NonceSizeX]
	plain, err := aead.Open(nil, nonce, rec[4+len(nonce):], journalAAD(seg, off))
	if err != nil {
		return nil, fmt.Errorf("%w: journal record failed authentication", ErrIntegrity)
	}
	return plain, nil
}

// append seals plain as one record and returns where it starts.
func (j *journal) append(plain []byte) (uint32, int64, error) {
	if err := j.err(); err != nil { // a record after a lost one could never be durable
		return 0, 0, err
	}
	if j.off >= j.segMax() {
		if err := j.rotate(); err != nil {
			return 0, 0, err
		}
	}
	rec := sealRecord(&j.key, j.seg, j.off, plain, randomBytes(chacha20poly1305.NonceSizeX))
	if int64(len(rec)-4) > maxRecord {
		return 0, 0, fmt.Errorf("journal append: a record of %d bytes, over %d", len(rec)-4, maxRecord)
	}
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		return 0, 0, fmt.Errorf("journal append: %w", err)
	}
	seg, off := j.seg, j.off
	j.off += int64(len(rec))
	j.size += int64(len(rec))
	j.unsynced = true
	return seg, off, nil
}

// sealRecord frames one journal record for position (seg, off).
func sealRecord(key *[32]byte, seg uint32, off int64, plain, nonce []byte) []byte {
	aead, _ := chacha20poly1305.NewX(key[:])
	rec := make([]byte, 4, 4+len(nonce)+len(plain)+chacha20poly1305.Overhead)
	rec = append(rec, nonce...)
	rec = aead.Seal(rec, nonce, plain, journalAAD(seg, off))
	binary.BigEndian.PutUint32(rec, uint32(len(rec)-4))
	return rec
}

func (j *journal) rotate() error {
	if err := j.sync(); err != nil {
		return err
	}
	j.readers[j.seg] = j.f // still read from; an epoch may be fsyncing it
	j.seg++
	j.off = 0
	f, err := os.OpenFile(filepath.Join(j.dir, segName(j.seg)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	j.f = f
	if j.fsync { // the new segment's name must survive a power loss like its records
		d, err := os.Open(j.dir)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		defer d.Close()
		return j.fsyncFile(d)
	}
	return nil
}

// sync makes every appended record durable, or returns the journal's first fsync error.
func (j *journal) sync() error {
	if !j.fsync {
		j.unsynced = false
		return nil
	}
	if !j.unsynced {
		return j.err()
	}
	if err := j.fsyncFile(j.f); err != nil {
		return err
	}
	j.unsynced = false
	return nil
}

// fsyncFile fsyncs f (a segment, or the journal's directory). Once an fsync has failed it
// fails without trying again (see failed).
func (j *journal) fsyncFile(f *os.File) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if err := j.err(); err != nil {
		return err
	}
	sync := j.syncFile
	if sync == nil {
		sync = (*os.File).Sync
	}
	if err := sync(f); err != nil {
		err = fmt.Errorf("journal fsync: %w", err)
		j.failed.Store(&err)
		return err
	}
	return nil
}

// err is the journal's first fsync error, if any.
func (j *journal) err() error {
	if p := j.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// record returns the plaintext of the record at (seg, off), caching the last one.
func (j *journal) record(seg uint32, off int64) ([]byte, error) {
	if j.rcPlain != nil && j.rcSeg == seg && j.rcOff == off {
		return j.rcPlain, nil
	}
	f := j.f
	if seg != j.seg {
		f = j.readers[seg]
		if f == nil {
			var err error
			if f, err = os.Open(filepath.Join(j.dir, segName(seg))); err != nil {
				return nil, fmt.Errorf("journal: %w", err)
			}
			j.readers[seg] = f
		}
	}
	plain, _, err := j.readRecordFrom(f, seg, off)
	if err != nil {
		return nil, fmt.Errorf("journal %s offset %d: %w", segName(seg), off, err)
	}
	j.rcSeg, j.rcOff, j.rcPlain = seg, off, plain
	return plain, nil
}

// gc deletes segments older than keepFrom that no pending extent references.
func (j *journal) gc(keepFrom uint32, referenced map[uint32]bool) {
	segs, err := listSegments(j.dir)
	if err != nil {
		return
	}
	for _, s := range segs {
		if s >= keepFrom || s == j.seg || referenced[s] {
			continue
		}
		p := filepath.Join(j.dir, segName(s))
		if st, err := os.Stat(p); err == nil {
			j.size -= st.Size()
		}
		if f := j.readers[s]; f != nil {
			f.Close()
			delete(j.readers, s)
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
	}
}

func (j *journal) close() error {
	for _, f := range j.readers {
		f.Close()
	}
	if j.f == nil {
		return nil
	}
	err := j.sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	return err
}
