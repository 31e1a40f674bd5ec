package share

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
	if len(entry) != EntryLen {
		return fmt.Errorf("share: entry of %d bytes, want %d", len(entry), EntryLen)
	}
	return l.db.Update(func(tx *bbolt.Tx) error {
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
	})
}

// Since closes the open epoch if it is due, deletes expired epochs, and returns the reply
// to a download from epoch from on (docs/formats/metal-share.md): the closed epochs from
// there on, the first epoch included (larger than from if older ones expired) and the
// epoch to ask from next time.
func (l *List) Since(from uint64) ([]byte, error) {
	var out []byte
	err := l.db.Update(func(tx *bbolt.Tx) error {
		if err := l.closeIfDue(tx); err != nil {
			return err
		}
		if err := l.expire(tx); err != nil {
			return err
		}
		next := nextEpoch(tx)
		c := tx.Bucket(bucketEpochs).Cursor()
		var entries []byte
		first := next
		for k, v := c.Seek(u64(from)); k != nil; k, v = c.Next() {
			if first == next {
				first = binary.BigEndian.Uint64(k)
			}
			entries = append(entries, v[8:]...)
		}
		out = EncodeListReply(first, next, entries)
		return nil
	})
	return out, err
}

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
	out := []byte{listVersion}
	out = binary.LittleEndian.AppendUint64(out, first)
	out = binary.LittleEndian.AppendUint64(out, next)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(entries)/EntryLen))
	return append(out, entries...)
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
