package dupless

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The snapshot cache (docs/formats/snapshot-cache.md): a local file beside the put cache
// that keeps, for every tree root this device has described, what `veil snapshots` and a
// mount's snapshots/ show of it (time, counts, the object's SHA-256) with the object's
// size and time as listed. Listing the snapshots then reads the roots' directory and only
// the roots not described yet: a root is written once under its number and never changed
// (forget replaces it by an empty gap mark), so a description stays true while an object
// of that number, size and listed time is listed. The listed time tells a root apart from
// another of its number written later (a service restored from a backup numbers its next
// roots as those it lost: found by review, with the size alone the listing showed the lost
// roots, and diff or get --at of them failed for good). Before, each listing read every root whole (a root names
// every record: 100 snapshots of 7,000 files were ~40 MB per `veil snapshots`). Opening a
// snapshot still reads and authenticates its root; a description is only ever shown. The
// file is sealed under the put cache's key with its own associated data, bound to the
// storage location; one that fails its check is rebuilt, never trusted.

const (
	snapCacheVersion   = 0x02 // 0x01 (no listed time): not used, rebuilt
	snapCacheEntrySize = 8 + 8 + 8 + 8 + 4 + 4 + 32
	maxSnapCacheBytes  = 64 << 20
)

// snapDesc is a cached description: the root object's size and time as listed (zero:
// the listing gives none), and its Snapshot.
type snapDesc struct {
	size    int64
	written time.Time
	snap    Snapshot
}

// describes reports whether d is a description of the root object listed with size and
// written.
func (d snapDesc) describes(size int64, written time.Time) bool {
	return d.size == size && d.written.Equal(written)
}

// unixNano is t in ns since the Unix epoch, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano is unixNano's inverse.
func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func snapCacheAD(location string) []byte {
	return append([]byte("veil/v1 snapshot cache\x00"), location...)
}

// snapCachePath is the snapshot cache beside the put cache pc (".put" -> ".snaps").
func snapCachePath(pc *PutCache) string {
	return strings.TrimSuffix(pc.Path, ".put") + ".snaps"
}

func marshalSnapCache(ds map[uint64]snapDesc) []byte {
	seqs := slices.Sorted(maps.Keys(ds))
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(seqs)*snapCacheEntrySize), uint32(len(seqs)))
	for _, s := range seqs {
		d := ds[s]
		b = binary.BigEndian.AppendUint64(b, s)
		b = binary.BigEndian.AppendUint64(b, uint64(d.size))
		b = binary.BigEndian.AppendUint64(b, uint64(unixNano(d.written)))
		b = binary.BigEndian.AppendUint64(b, uint64(d.snap.Time.UnixNano()))
		b = binary.BigEndian.AppendUint32(b, uint32(d.snap.Files))
		b = binary.BigEndian.AppendUint32(b, uint32(d.snap.Records))
		sum, _ := hex.DecodeString(d.snap.SHA256) // snapshotOf's hex of 32 bytes
		b = append(b, sum...)
	}
	return b
}

func unmarshalSnapCache(b []byte) (map[uint64]snapDesc, error) {
	if len(b) < 4 {
		return nil, errors.New("snapshot cache: truncated")
	}
	n := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	if len(b) != n*snapCacheEntrySize {
		return nil, fmt.Errorf("snapshot cache: %d bytes for %d entries", len(b), n)
	}
	out := make(map[uint64]snapDesc, n)
	var prev uint64
	for i := 0; i < n; i++ {
		e := b[i*snapCacheEntrySize:]
		s := binary.BigEndian.Uint64(e)
		if i > 0 && s <= prev {
			return nil, errors.New("snapshot cache: entries not in increasing order")
		}
		prev = s
		size := int64(binary.BigEndian.Uint64(e[8:]))
		if size <= 0 {
			return nil, fmt.Errorf("snapshot cache: root %d of %d bytes", s, size)
		}
		out[s] = snapDesc{size: size, written: fromUnixNano(int64(binary.BigEndian.Uint64(e[16:]))), snap: Snapshot{
			Seq:     s,
			Time:    time.Unix(0, int64(binary.BigEndian.Uint64(e[24:]))),
			Files:   int(binary.BigEndian.Uint32(e[32:])),
			Records: int(binary.BigEndian.Uint32(e[36:])),
			SHA256:  hex.EncodeToString(e[40:72]),
		}}
	}
	return out, nil
}

// sealSnapCache encrypts ds for the storage location (localfile.go: under the put
// cache's key, with the snapshot cache's own associated data).
func (k *userKeys) sealSnapCache(ds map[uint64]snapDesc, location string, nonce []byte) []byte {
	return k.sealLocal(snapCacheVersion, nonce, marshalSnapCache(ds), snapCacheAD(location))
}

func (k *userKeys) openSnapCache(b []byte, location string) (map[uint64]snapDesc, error) {
	plain, err := k.openLocal("snapshot cache", snapCacheVersion, b, snapCacheAD(location))
	if err != nil {
		return nil, err
	}
	return unmarshalSnapCache(plain)
}

// readSnapCache loads the snapshot cache of this client's location: empty without a put
// cache (no profile), when absent or of an older version, or when it cannot be used
// (logged; rebuilt by the caller's write).
func (c *Client) readSnapCache() map[uint64]snapDesc {
	pc := c.opts.Cache
	if pc == nil {
		return nil
	}
	p := snapCachePath(pc)
	b, err := readLocal("snapshot cache", p, maxSnapCacheBytes)
	if err == nil && (len(b) == 0 || b[0] < snapCacheVersion) {
		return map[uint64]snapDesc{} // none, or an older format: rebuilt, without a warning
	}
	var ds map[uint64]snapDesc
	if err == nil {
		ds, err = c.keys.openSnapCache(b, pc.Location)
	}
	if err != nil {
		c.log.Warn("snapshot cache not used (rebuilt from the roots)", "file", p, "err", err)
		return map[uint64]snapDesc{}
	}
	return ds
}

// writeSnapCache replaces the snapshot cache (writeLocal: a lost or torn file costs root
// reads, never a wrong description).
func (c *Client) writeSnapCache(ds map[uint64]snapDesc) {
	pc := c.opts.Cache
	if pc == nil {
		return
	}
	p := snapCachePath(pc)
	if err := c.keys.writeLocal(p, snapCacheVersion, marshalSnapCache(ds), snapCacheAD(pc.Location)); err != nil {
		c.log.Warn("snapshot cache not saved (the next listing reads the roots)", "file", p, "err", err)
	}
}

// describeRoots describes the roots seqs (sizes, written: their objects' sizes and times
// as listed), in order, from held (roots this client holds), the snapshot cache, or by
// reading the root (par at once); it saves what it read, and forgets roots no longer
// listed. A root a forget dropped meanwhile is left out.
func (c *Client) describeRoots(ctx context.Context, seqs []uint64, sizes map[uint64]int64, written map[uint64]time.Time, par int,
	held func(uint64) (*treeRoot, bool)) ([]Snapshot, error) {
	cached := c.readSnapCache()
	descs, err := loadEach(ctx, seqs, par, func(s uint64) (snapDesc, bool) {
		if r, ok := held(s); ok && int64(r.size) == sizes[s] {
			return snapDesc{size: sizes[s], written: written[s], snap: snapshotOf(r)}, true
		}
		d, ok := cached[s]
		return d, ok && d.describes(sizes[s], written[s])
	}, func(ctx context.Context, s uint64) (snapDesc, error) {
		r, err := c.fetchRootSeq(ctx, s)
		if errors.Is(err, ErrIntegrity) && s < seqs[len(seqs)-1] { // not the newest: listed as damaged, forget can drop it
			return snapDesc{snap: Snapshot{Seq: s, Damaged: damageReason(err.Error())}}, nil
		}
		if err != nil {
			return snapDesc{}, err
		}
		return snapDesc{size: int64(r.size), written: written[s], snap: snapshotOf(r)}, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Snapshot, len(descs))
	keep := make(map[uint64]snapDesc, len(descs))
	for i, d := range descs {
		out[i] = d.snap
		if d.snap.Damaged == "" { // described anew by every listing until forget drops it
			keep[d.snap.Seq] = d
		}
	}
	same := func(a, b snapDesc) bool {
		return a.describes(b.size, b.written) && a.snap.Time.Equal(b.snap.Time) && a.snap.Files == b.snap.Files &&
			a.snap.Records == b.snap.Records && a.snap.SHA256 == b.snap.SHA256
	}
	if cached != nil && !maps.EqualFunc(keep, cached, same) { // nil: no profile, nothing to save
		c.writeSnapCache(keep)
	}
	return out, nil
}
