package share

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"time"

	"go.etcd.io/bbolt"
)

// List is Server 1's capability broadcast list (Section 6.2) in its bbolt file. Entries
// appended by SendCapability wait in the open epoch; closing an epoch shuffles its entries
// (a uniform permutation from crypto/rand) and seals them as one record; users download
// closed epochs only, so the order of a download says nothing about the order of sends.
// Closed epochs older than the retention are deleted (the paper's "deleted after a fixed
// interval (e.g., three days)").
type List struct {
	db        *bbolt.DB
	Epoch     time.Duration // the open epoch closes at the first download this long after its first entry; 0: at every download
	Retention time.Duration // closed epochs older than this are deleted (0: kept forever)
	Now       func() time.Time
}

var (
	bucketOpen   = []byte("metal-share-open")
	bucketEpochs = []byte("metal-share-epochs")
	keyNextEpoch = []byte("next-epoch")
	keyOpenSince = []byte("open-since")
)

// OpenList uses db (opened by the caller), creating the buckets.
func OpenList(db *bbolt.DB) (*List, error) {
	err := db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketShare, bucketOpen, bucketEpochs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	return &List{db: db, Retention: 72 * time.Hour, Now: time.Now}, err
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// Append adds an entry to the open epoch, durably (one transaction).
func (l *List) Append(entry []byte) error {
	return l.db.Update(func(tx *bbolt.Tx) error { return l.append(tx, entry) })
}

func (l *List) append(tx *bbolt.Tx, entry []byte) error {
	if len(entry) != EntryLen {
		return fmt.Errorf("share: entry of %d bytes, want %d", len(entry), EntryLen)
	}
	open := tx.Bucket(bucketOpen)
	if k, _ := open.Cursor().First(); k == nil {
		if err := tx.Bucket(bucketShare).Put(keyOpenSince, u64(uint64(l.Now().UnixNano()))); err != nil {
			return err
		}
	}
	seq, err := open.NextSequence()
	if err != nil {
		return err
	}
	return open.Put(u64(seq), entry)
}

// AppendAll appends entries to the open epoch in one transaction (a benchmark's or a
// test's filling of the list; each send uses Append).
func (l *List) AppendAll(entries [][]byte) error {
	return l.db.Update(func(tx *bbolt.Tx) error {
		for _, e := range entries {
			if err := l.append(tx, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// Since is Prepare then WriteSince into memory: the whole reply to a download from epoch
// from on (docs/formats/metal-share.md). For tests and small lists; a server streams
// (WriteSince).
func (l *List) Since(from uint64) ([]byte, error) {
	if err := l.Prepare(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err := l.WriteSince(&b, from)
	return b.Bytes(), err
}

// Prepare readies the list for a download: it closes the open epoch if it is due (the
// paper's shuffle before sending) and deletes expired epochs. Both change the file, so
// this is one write transaction, short: it holds the open epoch's entries only.
func (l *List) Prepare() error {
	return l.db.Update(func(tx *bbolt.Tx) error {
		if err := l.closeIfDue(tx); err != nil {
			return err
		}
		return l.expire(tx)
	})
}

// WriteSince writes to w the reply to a download from epoch from on: the closed epochs
// from there on, the first epoch included (larger than from if older ones expired) and the
// epoch to ask from next time. It copies the entries out listPiece bytes at a time, each
// piece in a read transaction of its own, so its memory does not grow with the list and no
// transaction lasts while w waits for a slow client. Found by review: the whole reply was
// written inside one read transaction, which holds bbolt's mmap lock; a write that grows
// the file (and the open transaction kept freed pages from being reused) waited for it,
// and every write after that one, so an account holder reading slowly stalled every call
// (TestSlowListDownloadHoldsUpNobody). Closed epochs never change; one that expires
// during the download cuts the reply. An error after the first byte leaves w with a short
// reply, which ReadListReply refuses.
func (l *List) WriteSince(w io.Writer, from uint64) error {
	var epochs [][]byte // the epochs the header counts, in order
	var first, next, n uint64
	err := l.db.View(func(tx *bbolt.Tx) error {
		next = nextEpoch(tx)
		first = next
		c := tx.Bucket(bucketEpochs).Cursor()
		for k, v := c.Seek(u64(from)); k != nil; k, v = c.Next() {
			if first == next {
				first = binary.BigEndian.Uint64(k)
			}
			epochs = append(epochs, append([]byte(nil), k...))
			n += uint64(len(v)-8) / EntryLen
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n > math.MaxUint32 {
		return fmt.Errorf("share: %d entries since epoch %d, more than a reply holds", n, from)
	}
	if _, err := w.Write(listHeader(first, next, uint32(n))); err != nil {
		return err
	}
	buf := make([]byte, 0, listPiece)
	off := 8 // in epochs[0]'s record: past its closing time
	for len(epochs) > 0 {
		buf = buf[:0]
		err := l.db.View(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketEpochs)
			for len(epochs) > 0 && len(buf) < cap(buf) {
				v := b.Get(epochs[0])
				if v == nil {
					return fmt.Errorf("share: epoch %d expired during the download", binary.BigEndian.Uint64(epochs[0]))
				}
				k := copy(buf[len(buf):cap(buf)], v[off:])
				buf, off = buf[:len(buf)+k], off+k
				if off == len(v) {
					epochs, off = epochs[1:], 8
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// listPiece is how much of a download WriteSince copies out in one read transaction.
const listPiece = 256 << 10

func nextEpoch(tx *bbolt.Tx) uint64 {
	if v := tx.Bucket(bucketShare).Get(keyNextEpoch); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (l *List) closeIfDue(tx *bbolt.Tx) error {
	open := tx.Bucket(bucketOpen)
	if k, _ := open.Cursor().First(); k == nil {
		return nil
	}
	if since := tx.Bucket(bucketShare).Get(keyOpenSince); l.Epoch > 0 && len(since) == 8 {
		if l.Now().Sub(time.Unix(0, int64(binary.BigEndian.Uint64(since)))) < l.Epoch {
			return nil
		}
	}
	var entries [][]byte
	if err := open.ForEach(func(_, v []byte) error {
		entries = append(entries, append([]byte(nil), v...))
		return nil
	}); err != nil {
		return err
	}
	if err := shuffle(entries); err != nil {
		return err
	}
	rec := u64(uint64(l.Now().UnixNano()))
	for _, e := range entries {
		rec = append(rec, e...)
	}
	next := nextEpoch(tx)
	if err := tx.Bucket(bucketEpochs).Put(u64(next), rec); err != nil {
		return err
	}
	if err := tx.DeleteBucket(bucketOpen); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketOpen); err != nil {
		return err
	}
	return tx.Bucket(bucketShare).Put(keyNextEpoch, u64(next+1))
}

func (l *List) expire(tx *bbolt.Tx) error {
	if l.Retention <= 0 {
		return nil
	}
	cut := l.Now().Add(-l.Retention).UnixNano()
	c := tx.Bucket(bucketEpochs).Cursor()
	for k, v := c.First(); k != nil; k, v = c.First() {
		if int64(binary.BigEndian.Uint64(v[:8])) >= cut {
			return nil
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// shuffle is Fisher-Yates with crypto/rand.
func shuffle(e [][]byte) error {
	for i := len(e) - 1; i > 0; i-- {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(i+1)))
		if err != nil {
			return err
		}
		e[i], e[j.Int64()] = e[j.Int64()], e[i]
	}
	return nil
}

const listVersion = 1

// ListHeaderLen is version, first epoch, next epoch, entry count.
const ListHeaderLen = 1 + 8 + 8 + 4

// EncodeListReply lays out a download reply.
func EncodeListReply(first, next uint64, entries []byte) []byte {
	return append(listHeader(first, next, uint32(len(entries)/EntryLen)), entries...)
}

func listHeader(first, next uint64, n uint32) []byte {
	out := []byte{listVersion}
	out = binary.LittleEndian.AppendUint64(out, first)
	out = binary.LittleEndian.AppendUint64(out, next)
	return binary.LittleEndian.AppendUint32(out, n)
}

// ListReply is a parsed download.
type ListReply struct {
	First, Next uint64
	Entries     [][]byte
}

// parseListHeader checks a download's ListHeaderLen-byte header and returns its epochs and
// entry count.
func parseListHeader(b []byte) (first, next, n uint64, err error) {
	if b[0] != listVersion {
		return 0, 0, 0, fmt.Errorf("share list: version %d, want %d", b[0], listVersion)
	}
	first, next = binary.LittleEndian.Uint64(b[1:]), binary.LittleEndian.Uint64(b[9:])
	if first > next {
		return 0, 0, 0, errors.New("share list: first epoch after the next one")
	}
	return first, next, uint64(binary.LittleEndian.Uint32(b[17:])), nil
}

// ParseListReply reads an EncodeListReply'd download (untrusted bytes from Server 1).
func ParseListReply(b []byte) (ListReply, error) {
	if len(b) < ListHeaderLen {
		return ListReply{}, fmt.Errorf("share list: %d bytes, shorter than its header", len(b))
	}
	first, next, n, err := parseListHeader(b)
	if err != nil {
		return ListReply{}, err
	}
	r := ListReply{First: first, Next: next}
	body := b[ListHeaderLen:]
	if uint64(len(body)) != n*EntryLen {
		return ListReply{}, fmt.Errorf("share list: %d entries announced, %d bytes follow", n, len(body))
	}
	for i := uint64(0); i < n; i++ {
		r.Entries = append(r.Entries, body[i*EntryLen:(i+1)*EntryLen])
	}
	return r, nil
}

// ReadListReply reads a download from rd as it arrives (untrusted bytes from Server 1),
// calling each on every entry in turn (the slice is reused: copy what must be kept), so
// that a receive of any length needs no more memory than one entry. It returns the
// reply's epochs (Entries nil) and the number of entries; the reply must end after them.
func ReadListReply(rd io.Reader, each func(entry []byte) error) (ListReply, uint64, error) {
	var h [ListHeaderLen]byte
	if k, err := io.ReadFull(rd, h[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return ListReply{}, 0, fmt.Errorf("share list: %d bytes, shorter than its header", k)
		}
		return ListReply{}, 0, err
	}
	first, next, n, err := parseListHeader(h[:])
	if err != nil {
		return ListReply{}, 0, err
	}
	e := make([]byte, EntryLen)
	for i := uint64(0); i < n; i++ {
		if k, err := io.ReadFull(rd, e); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return ListReply{}, 0, fmt.Errorf("share list: %d entries announced, %d bytes follow", n, i*EntryLen+uint64(k))
			}
			return ListReply{}, 0, err
		}
		if err := each(e); err != nil {
			return ListReply{}, 0, err
		}
	}
	if k, err := io.ReadFull(rd, e[:1]); k != 0 {
		return ListReply{}, 0, fmt.Errorf("share list: more than the %d entries announced", n)
	} else if err != io.EOF {
		return ListReply{}, 0, err
	}
	return ListReply{First: first, Next: next}, n, nil
}
