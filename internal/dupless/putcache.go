package dupless

import (
	"encoding/binary"
	"fmt"
)

// The put cache (docs/formats/put-cache.md): a local file, per profile and storage
// location, that remembers for every record this device stored or checked the hash of the
// record object and what put compares (kind, size, mtime, mode, target), plus the local
// file's ctime, inode and device. A put skips an entry without reading its record when the
// newest tree root still lists that very record (same hash) and the local entry is as
// remembered (and, for a file, was not read within a timestamp tick of a change: racy,
// putcache_run.go). The root is authenticated and the cache is authenticated under a key of the
// user's master key bound to the location, so neither the service nor another profile's
// file can make put skip a changed file; a cache that fails its check, is of another
// version, or does not match the root is rebuilt (as put reads records), never trusted.

// PutCache names the cache file of one storage location (Options.Cache).
type PutCache struct {
	Path     string // the cache file (written atomically, mode 0600)
	Location string // the storage location it describes: bound into its authentication
}

const (
	cacheVersion    = 0x01
	maxCacheBytes   = 1 << 30
	cacheRandomKey  = 1 << 0 // cacheEntry.Flags: a chunk of the record has a random key
	cacheEntryFixed = 32 + 1 + 1 + 4 + 8 + 8 + 4 + 2 + 8 + 8 + 8
)

// cacheEntry is what the cache keeps of one record (by its storage path).
type cacheEntry struct {
	Hash   [32]byte // SHA-256 of the record object, as the tree root lists it
	Type   uint8
	Flags  uint8
	Mode   uint32
	MTime  int64
	Size   uint64
	Chunks uint32
	Target string
	CTime  int64 // the local file's status change time (files only; 0 otherwise)
	Ino    uint64
	Dev    uint64
}

// cacheFile is the plaintext of the cache: the tree root it was written against, and the
// entries.
type cacheFile struct {
	RootSeq uint64
	RootSum [32]byte
	Entries map[string]cacheEntry
}

func cacheAD(location string) []byte { return append([]byte("veil/v1 put cache\x00"), location...) }

func (f *cacheFile) marshal() []byte {
	b := make([]byte, 0, 44+len(f.Entries)*(cacheEntryFixed+64))
	b = binary.BigEndian.AppendUint64(b, f.RootSeq)
	b = append(b, f.RootSum[:]...)
	return appendSortedEntries(b, f.Entries, func(b []byte, e cacheEntry) []byte {
		b = append(b, e.Hash[:]...)
		b = append(b, e.Type, e.Flags)
		b = binary.BigEndian.AppendUint32(b, e.Mode)
		b = binary.BigEndian.AppendUint64(b, uint64(e.MTime))
		b = binary.BigEndian.AppendUint64(b, e.Size)
		b = binary.BigEndian.AppendUint32(b, e.Chunks)
		b = binary.BigEndian.AppendUint16(b, uint16(len(e.Target)))
		b = append(b, e.Target...)
		b = binary.BigEndian.AppendUint64(b, uint64(e.CTime))
		b = binary.BigEndian.AppendUint64(b, e.Ino)
		return binary.BigEndian.AppendUint64(b, e.Dev)
	})
}

func unmarshalCache(b []byte) (*cacheFile, error) {
	p := &parser{b: b}
	f := &cacheFile{RootSeq: p.u64()}
	copy(f.RootSum[:], p.take(32))
	n := p.u32()
	if p.err == nil && uint64(n)*(cacheEntryFixed+3) > uint64(len(p.b)) {
		return nil, fmt.Errorf("put cache: %d entries do not fit %d bytes", n, len(p.b))
	}
	var err error
	f.Entries, err = sortedEntries(p, n, "put cache", func(p *parser) cacheEntry {
		var e cacheEntry
		copy(e.Hash[:], p.take(32))
		e.Type, e.Flags, e.Mode = p.u8(), p.u8(), p.u32()
		e.MTime, e.Size, e.Chunks = int64(p.u64()), p.u64(), p.u32()
		e.Target = string(p.take(int(p.u16())))
		e.CTime, e.Ino, e.Dev = int64(p.u64()), p.u64(), p.u64()
		return e
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// sealCache encrypts f for the storage location (compressed, then sealed: localfile.go).
func (k *userKeys) sealCache(f *cacheFile, location string, nonce []byte) []byte {
	return k.sealLocal(cacheVersion, nonce, cacheEnc.EncodeAll(f.marshal(), nil), cacheAD(location))
}

// openCache authenticates and parses a cache file of the storage location.
func (k *userKeys) openCache(b []byte, location string) (*cacheFile, error) {
	z, err := k.openLocal("put cache", cacheVersion, b, cacheAD(location))
	if err != nil {
		return nil, err
	}
	plain, err := rootDec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("put cache: %w", err)
	}
	return unmarshalCache(plain)
}

// readCache loads the cache file; a missing file is an empty cache, and one that cannot
// be used is reported (err) and treated as empty: the caller rebuilds it.
func (k *userKeys) readCache(pc *PutCache) (*cacheFile, error) {
	empty := &cacheFile{Entries: map[string]cacheEntry{}}
	b, err := readLocal("put cache", pc.Path, maxCacheBytes)
	if err != nil || b == nil {
		return empty, err
	}
	f, err := k.openCache(b, pc.Location)
	if err != nil {
		return empty, err
	}
	return f, nil
}

// writeCache replaces the cache file (writeLocal).
func (k *userKeys) writeCache(pc *PutCache, f *cacheFile) error {
	return k.writeLocal(pc.Path, cacheVersion, cacheEnc.EncodeAll(f.marshal(), nil), cacheAD(pc.Location))
}
