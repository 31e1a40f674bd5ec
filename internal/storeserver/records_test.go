package storeserver

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const vectorsFile = "../../testdata/storeserver/records.json"

// recordVector is one published vector of docs/formats/store-records.md.
type recordVector struct {
	Type    string `json:"type"` // entry, blob, user, key, dbversion
	Desc    string `json:"desc"`
	Hex     string `json:"hex"`
	Outcome string `json:"outcome"` // "ok", "bad record", or "newer" (dbversion: refused, not damaged)
	// Decoded fields (ok vectors).
	Kind    int    `json:"kind,omitempty"`
	Size    int64  `json:"size,omitempty"`
	ModTime int64  `json:"mod_time,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Inline  bool   `json:"inline,omitempty"`
	Refs    int64  `json:"refs,omitempty"`
	DataID  uint64 `json:"data_id,omitempty"`
	Key     int64  `json:"key,omitempty"`
	Admin   bool   `json:"admin,omitempty"`
	Quota   int64  `json:"quota,omitempty"`
	Used    int64  `json:"used,omitempty"`
	Created int64  `json:"created,omitempty"`
	Dir     string `json:"dir,omitempty"`
	Name    string `json:"name,omitempty"`
	Version int    `json:"version,omitempty"` // dbversion: the version read (a lower one is upgraded at open)
}

func seq(n int, start byte) [32]byte {
	var h [32]byte
	for i := range h[:n] {
		h[i] = start + byte(i)
	}
	return h
}

// generateVectors builds the vectors deterministically from the encoders.
func generateVectors() []recordVector {
	h := seq(32, 0xa0)
	file := entry{kind: kindFile, size: 1 << 20, modTime: 1_700_000_000_123_456_789, hash: h}
	dir := entry{kind: kindDir, modTime: 1_700_000_000_000_000_000}
	blob := blobRec{size: 1 << 20, refs: 2}
	inl := blobRec{inline: true, size: 4096, refs: 1, dataID: 7}
	user := userRec{admin: false, secretHash: seq(32, 0x10), quota: 10 << 30, used: 3 << 20, created: 1_700_000_000}
	admin := userRec{admin: true, secretHash: seq(32, 0x40), created: 1_700_000_001}
	x := func(b []byte) string { return hex.EncodeToString(b) }
	hx := hex.EncodeToString(h[:])
	fileBad := file.marshal()
	fileBad[1] = 3
	dirSized := dir.marshal()
	dirSized[9] = 1
	negBlob := blob.marshal()
	negBlob[2] = 0x80
	bigInline := blobRec{inline: true, size: InlineMax + 1, dataID: 1}.marshal()
	noData := blobRec{inline: true, size: 10}.marshal()
	strayData := blobRec{size: 10, dataID: 3}.marshal()
	badFlags := blob.marshal()
	badFlags[1] = 2
	v2user := user.marshal()
	v2user[0] = 2
	keyed := blobRec{size: 1 << 20, refs: 1, key: 0x0123456789abcdef}
	keyZero := keyed.marshal()
	clear(keyZero[26:])
	keyNeg := keyed.marshal()
	keyNeg[26] = 0x80
	keyInline := append(inl.marshal(), keyed.marshal()[26:]...) // inline of 4096 bytes, data id 7
	keyInline[0] = blobRecordKeyed
	keyV1 := keyed.marshal()
	keyV1[0] = recordVersion
	v2Short := blob.marshal()
	v2Short[0] = blobRecordKeyed
	return []recordVector{
		{Type: "entry", Desc: "file of 1 MiB", Hex: x(file.marshal()), Outcome: "ok", Kind: kindFile, Size: file.size, ModTime: file.modTime, Hash: hx},
		{Type: "entry", Desc: "directory", Hex: x(dir.marshal()), Outcome: "ok", Kind: kindDir, ModTime: dir.modTime},
		{Type: "entry", Desc: "unknown kind", Hex: x(fileBad), Outcome: "bad record"},
		{Type: "entry", Desc: "directory with a size", Hex: x(dirSized), Outcome: "bad record"},
		{Type: "entry", Desc: "file record cut short", Hex: x(file.marshal()[:30]), Outcome: "bad record"},
		{Type: "entry", Desc: "version 2", Hex: "02" + x(dir.marshal()[1:]), Outcome: "bad record"},
		{Type: "entry", Desc: "empty", Hex: "", Outcome: "bad record"},
		{Type: "blob", Desc: "blob in the blob store, 2 references", Hex: x(blob.marshal()), Outcome: "ok", Size: blob.size, Refs: blob.refs},
		{Type: "blob", Desc: "inline blob", Hex: x(inl.marshal()), Outcome: "ok", Inline: true, Size: inl.size, Refs: inl.refs, DataID: 7},
		{Type: "blob", Desc: "unreferenced blob (garbage)", Hex: x(blobRec{size: 5}.marshal()), Outcome: "ok", Size: 5},
		{Type: "blob", Desc: "negative size", Hex: x(negBlob), Outcome: "bad record"},
		{Type: "blob", Desc: "inline blob larger than InlineMax", Hex: x(bigInline), Outcome: "bad record"},
		{Type: "blob", Desc: "unknown flag", Hex: x(badFlags), Outcome: "bad record"},
		{Type: "blob", Desc: "inline blob without a data id", Hex: x(noData), Outcome: "bad record"},
		{Type: "blob", Desc: "blob-store blob with a data id", Hex: x(strayData), Outcome: "bad record"},
		{Type: "blob", Desc: "trailing byte", Hex: x(append(blob.marshal(), 0)), Outcome: "bad record"},
		{Type: "blob", Desc: "version 2: blob in the blob store under a key", Hex: x(keyed.marshal()), Outcome: "ok", Size: keyed.size, Refs: keyed.refs, Key: keyed.key},
		{Type: "blob", Desc: "version 2 with key 0", Hex: x(keyZero), Outcome: "bad record"},
		{Type: "blob", Desc: "version 2 with a negative key", Hex: x(keyNeg), Outcome: "bad record"},
		{Type: "blob", Desc: "version 2 inline", Hex: x(keyInline), Outcome: "bad record"},
		{Type: "blob", Desc: "version 1 of the length of version 2", Hex: x(keyV1), Outcome: "bad record"},
		{Type: "blob", Desc: "version 2 of the length of version 1", Hex: x(v2Short), Outcome: "bad record"},
		{Type: "user", Desc: "user with a quota", Hex: x(user.marshal()), Outcome: "ok", Hash: x(user.secretHash[:]), Quota: user.quota, Used: user.used, Created: user.created},
		{Type: "user", Desc: "admin", Hex: x(admin.marshal()), Outcome: "ok", Admin: true, Hash: x(admin.secretHash[:]), Created: admin.created},
		{Type: "user", Desc: "version 2", Hex: x(v2user), Outcome: "bad record"},
		{Type: "key", Desc: "name in the root", Hex: x(nsKey("", "report.bin")), Outcome: "ok", Name: "report.bin"},
		{Type: "key", Desc: "name in a subdirectory", Hex: x(nsKey("a/b c", "ünï")), Outcome: "ok", Dir: "a/b c", Name: "ünï"},
		{Type: "key", Desc: "no separator", Hex: x([]byte("a/b")), Outcome: "bad record"},
		{Type: "dbversion", Desc: "current (session 17)", Hex: "03", Outcome: "ok", Version: 3},
		{Type: "dbversion", Desc: "keyed blob records (session 15), upgraded at open", Hex: "02", Outcome: "ok", Version: 2},
		{Type: "dbversion", Desc: "first, upgraded at open", Hex: "01", Outcome: "ok", Version: 1},
		{Type: "dbversion", Desc: "a newer veil's", Hex: "04", Outcome: "newer"},
		{Type: "dbversion", Desc: "zero", Hex: "00", Outcome: "bad record"},
		{Type: "dbversion", Desc: "two bytes", Hex: "0300", Outcome: "bad record"},
		{Type: "dbversion", Desc: "none", Hex: "", Outcome: "bad record"},
	}
}

// checkVector decodes v and compares every field, and re-encodes ok vectors byte for byte.
func checkVector(t *testing.T, v recordVector) {
	raw, err := hex.DecodeString(v.Hex)
	if err != nil {
		t.Fatalf("%s: %v", v.Desc, err)
	}
	var got recordVector
	var enc []byte
	switch v.Type {
	case "entry":
		var e entry
		if e, err = parseEntry(raw); err == nil {
			got = recordVector{Kind: int(e.kind), Size: e.size, ModTime: e.modTime}
			if e.kind == kindFile {
				got.Hash = hex.EncodeToString(e.hash[:])
			}
			enc = e.marshal()
		}
	case "blob":
		var r blobRec
		if r, err = parseBlobRec(raw); err == nil {
			got, enc = recordVector{Inline: r.inline, Size: r.size, Refs: r.refs, DataID: r.dataID, Key: r.key}, r.marshal()
		}
	case "user":
		var u userRec
		if u, err = parseUserRec(raw); err == nil {
			got = recordVector{Admin: u.admin, Hash: hex.EncodeToString(u.secretHash[:]), Quota: u.quota, Used: u.used, Created: u.created}
			enc = u.marshal()
		}
	case "key":
		var d, n string
		if d, n, err = splitKey(raw); err == nil {
			got, enc = recordVector{Dir: d, Name: n}, nsKey(d, n)
		}
	case "dbversion":
		var n byte
		if n, err = parseDBVersion(raw); err == nil {
			got, enc = recordVector{Version: int(n)}, []byte{n}
		}
		if v.Outcome == "newer" {
			if !errors.Is(err, ErrNewerStore) {
				t.Fatalf("%s %s: must be refused as newer, got %v", v.Type, v.Desc, err)
			}
			return
		}
	default:
		t.Fatalf("%s: unknown type %q", v.Desc, v.Type)
	}
	if v.Outcome != "ok" {
		if !errors.Is(err, errRecord) {
			t.Fatalf("%s %s: must fail with a bad record, got %v", v.Type, v.Desc, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s %s: %v", v.Type, v.Desc, err)
	}
	want := v
	want.Type, want.Desc, want.Hex, want.Outcome = "", "", "", ""
	if got != want {
		t.Fatalf("%s %s: decoded %+v, want %+v", v.Type, v.Desc, got, want)
	}
	if !bytes.Equal(enc, raw) {
		t.Fatalf("%s %s: re-encodes to %x", v.Type, v.Desc, enc)
	}
}

func TestRecordVectors(t *testing.T) {
	var vs []recordVector
	testutil.Vectors(t, vectorsFile, &vs, func() any { return generateVectors() })
	gen := generateVectors()
	if len(vs) != len(gen) {
		t.Fatalf("%d vectors on disk, generator makes %d: the format changed without -update", len(vs), len(gen))
	}
	for i, v := range vs {
		if v != gen[i] {
			t.Fatalf("vector %d (%s) differs from the generator: the encoding changed", i, v.Desc)
		}
		checkVector(t, v)
	}
}

// FuzzRecords feeds arbitrary bytes to every record parser: no panic, and whatever parses
// re-encodes to the same bytes (one encoding per value).
func FuzzRecords(f *testing.F) {
	for _, v := range generateVectors() {
		raw, _ := hex.DecodeString(v.Hex)
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := parseEntry(b); err == nil && !bytes.Equal(e.marshal(), b) {
			t.Fatalf("entry %x re-encodes to %x", b, e.marshal())
		}
		if r, err := parseBlobRec(b); err == nil && !bytes.Equal(r.marshal(), b) {
			t.Fatalf("blob %x re-encodes to %x", b, r.marshal())
		}
		if u, err := parseUserRec(b); err == nil && !bytes.Equal(u.marshal(), b) {
			t.Fatalf("user %x re-encodes to %x", b, u.marshal())
		}
		if v, err := parseDBVersion(b); err == nil && !bytes.Equal([]byte{v}, b) {
			t.Fatalf("database version %x re-encodes to %x", b, v)
		}
		if d, n, err := splitKey(b); err == nil && !bytes.Equal(nsKey(d, n), b) {
			t.Fatalf("key %x re-encodes to %x", b, nsKey(d, n))
		}
	})
}
