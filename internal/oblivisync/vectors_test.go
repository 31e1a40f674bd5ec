package oblivisync

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

const vectorsPath = "../../testdata/oblivisync/vectors.json"

// vector is one published test vector: inputs, the exact bytes, and the expected outcome
// ("ok", or the error class a reader must report: "wrong passphrase", "integrity", "format").
type vector struct {
	Name   string            `json:"name"`
	Type   string            `json:"type"` // keyfile | container | superblock | page | journal
	Input  map[string]string `json:"input"`
	Bytes  string            `json:"bytes"`
	Result string            `json:"result"`
}

func seq(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func hx(b []byte) string { return hex.EncodeToString(b) }

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 1
	return c
}

// vectorGeometry: the smallest backend file size (4096 bytes) keeps vectors short.
var vectorGeometry = newGeometry(4096)

// makeVectors builds every vector deterministically (fixed keys, salts and nonces).
func makeVectors() []vector {
	var vs []vector
	// Key file.
	kf := &keyFile{kdf: KDF{Time: 1, MemoryKiB: 64, Threads: 1}, params: Params{Files: 4, FileSize: 4096, K: 2, DripTime: 1500 * time.Millisecond}}
	copy(kf.salt[:], seq(16, 0x10))
	copy(kf.id[:], seq(16, 0x20))
	key, _ := sealKeyFile(kf, []byte("passphrase"), seq(32, 0x40), seq(24, 0x60))
	in := map[string]string{"passphrase": "passphrase", "salt": hx(kf.salt[:]), "id": hx(kf.id[:]), "master": hx(seq(32, 0x40)),
		"nonce": hx(seq(24, 0x60)), "kdf": "argon2id t=1 m=64KiB p=1", "params": "N=4 B=4096 k=2 t=1500ms"}
	vs = append(vs,
		vector{"key file", "keyfile", in, hx(key), "ok"},
		vector{"key file, wrong passphrase", "keyfile", map[string]string{"passphrase": "Passphrase"}, hx(key), "wrong passphrase"},
		vector{"key file, drip rate altered", "keyfile", map[string]string{"passphrase": "passphrase"}, hx(flip(key, keyHdrLen-5)), "wrong passphrase"},
		vector{"key file, salt altered", "keyfile", map[string]string{"passphrase": "passphrase"}, hx(flip(key, 14)), "wrong passphrase"},
		vector{"key file, unknown version", "keyfile", map[string]string{"passphrase": "passphrase"}, hx(flip(key, 4)), "format"},
		vector{"key file, truncated", "keyfile", map[string]string{"passphrase": "passphrase"}, hx(key[:len(key)-1]), "format"},
	)
	// Backend file: a block pair holding one fragment on side 1.
	var ck [32]byte
	copy(ck[:], seq(32, 0x80))
	var id [idLen]byte
	copy(id[:], seq(16, 0x20))
	plain := make([]byte, vectorGeometry.plain)
	copy(plain, []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 3}) // epoch 7, file 3
	es := &epochState{files: []uint32{3}, plain: [][]byte{plain}}
	es.put(vectorGeometry, gap{slot: 0, side: 1, off: 0}, 9, 0, []byte("hello, oblivious world"))
	img := sealContainer(&ck, id, 'B', 3, plain, seq(24, 0xa0))
	cin := map[string]string{"key": hx(ck[:]), "id": hx(id[:]), "kind": "B", "index": "3", "nonce": hx(seq(24, 0xa0)), "plaintext": hx(plain)}
	wrongIdx := map[string]string{"key": hx(ck[:]), "id": hx(id[:]), "kind": "B", "index": "2"}
	wrongKind := map[string]string{"key": hx(ck[:]), "id": hx(id[:]), "kind": "S", "index": "3"}
	vs = append(vs,
		vector{"backend file", "container", cin, hx(img), "ok"},
		vector{"backend file, one bit flipped", "container", cin, hx(flip(img, 2000)), "integrity"},
		vector{"backend file, under another index", "container", wrongIdx, hx(img), "integrity"},
		vector{"backend file, as a superblock", "container", wrongKind, hx(img), "integrity"},
		vector{"backend file, truncated", "container", cin, hx(img[:len(img)-1]), "integrity"},
		vector{"backend file, unknown version", "container", cin, hx(flip(img, 0)), "integrity"},
	)
	// Superblock plaintext.
	sb := &superblock{Epoch: 7, NextIno: 70, Written: []uint64{7, 0, 5, 7}, Pages: map[uint32]pageLoc{
		0: {Size: 30, Frags: []ref{{File: 3, Side: 1, Off: 40, Stored: 30, Valid: 30}}}}}
	sbb, _ := sb.encode(vectorGeometry)
	sin := map[string]string{"files": "4", "file_size": "4096"}
	bad := append([]byte(nil), sbb...)
	bad[20+8] = 9 // file 1 written "in the future"
	// With the extension after the page table (last change at epoch 6); readers that do
	// not know it stop at the page table.
	sb.LastChange, sb.HasChange = 6, true
	sbx, _ := sb.encode(vectorGeometry)
	future := append([]byte(nil), sbx...)
	future[sb.size()-1] = 8 // last change (its last byte) at epoch 8, after the epoch
	vs = append(vs,
		vector{"superblock plaintext", "superblock", sin, hx(sbb), "ok"},
		vector{"superblock, file written after the epoch", "superblock", sin, hx(bad), "format"},
		vector{"superblock, truncated", "superblock", sin, hx(sbb[:40]), "format"},
		vector{"superblock with last change", "superblock", sin, hx(sbx), "ok"},
		vector{"superblock, last change after the epoch", "superblock", sin, hx(future), "format"},
	)
	// With the file tags after the last change (the first 8 bytes of each file's nonce; 0
	// for file 1, never written): readers refuse a file stamped written[f] with another tag.
	sb.HasTags, sb.Tags = true, []uint64{0x0102030405060708, 0, 0xa0a1a2a3a4a5a6a7, 0xfffefdfcfbfaf9f8}
	sbt, _ := sb.encode(vectorGeometry)
	unwritten := append([]byte(nil), sbt...)
	unwritten[sb.size()-17] = 1 // a tag (its last byte) for file 1, never written
	tin := map[string]string{"files": "4", "file_size": "4096", "tags": "0102030405060708 0000000000000000 a0a1a2a3a4a5a6a7 fffefdfcfbfaf9f8"}
	vs = append(vs,
		vector{"superblock with file tags", "superblock", tin, hx(sbt), "ok"},
		vector{"superblock, tag for a never-written file", "superblock", tin, hx(unwritten), "format"},
	)
	// Metadata page.
	nodes := []*node{
		{Ino: 1, Mode: syscall.S_IFDIR | 0o755, Atime: 1, Mtime: 2, Ctime: 3},
		{Ino: 2, Parent: 1, Name: "notes.txt", Mode: syscall.S_IFREG | 0o644, Uid: 1000, Gid: 1000, Size: 22,
			Atime: 4, Mtime: 5, Ctime: 6, Frags: []ref{{File: 3, Side: 1, Off: 0, Stored: 22, Valid: 22}}},
		{Ino: 3, Parent: 1, Name: "link", Mode: syscall.S_IFLNK | 0o777, Size: 9, Target: "notes.txt"},
	}
	pg := encodePageV(1, 0, nodes) // version 1: what older writers wrote, still read
	pin := map[string]string{"page": "0", "files": "4", "file_size": "4096"}
	vs = append(vs,
		vector{"metadata page", "page", pin, hx(pg), "ok"},
		vector{"metadata page, claims page 1", "page", pin, hx(flip(pg, 4)), "integrity"},
		vector{"metadata page, trailing byte", "page", pin, hx(append(append([]byte(nil), pg...), 0)), "format"},
		vector{"metadata page, fragment beyond the backend", "page", pin, hx(bytes.Replace(pg, []byte{0, 0, 0, 3, 1}, []byte{0, 0, 0, 4, 1}, 1)), "format"},
	)
	// Version 2: every record is followed by its version (the epoch that committed it).
	nodes[0].Ver, nodes[1].Ver, nodes[2].Ver = 3, 0x0102030405060708, 5
	pg2 := encodePage(0, nodes)
	pin2 := map[string]string{"page": "0", "files": "4", "file_size": "4096", "versions": "3 72623859790382856 5"}
	vs = append(vs,
		vector{"metadata page v2", "page", pin2, hx(pg2), "ok"},
		vector{"metadata page v2, claims page 1", "page", pin2, hx(flip(pg2, 4)), "integrity"},
		vector{"metadata page v2, last version cut short", "page", pin2, hx(pg2[:len(pg2)-1]), "format"},
		vector{"metadata page v2, unknown version 3", "page", pin2, hx(append([]byte{3}, pg2[1:]...)), "format"},
	)
	// Journal record: a write of 5 bytes at offset 0 of inode 2.
	var jk [32]byte
	copy(jk[:], seq(32, 0xc0))
	bt := newBatch(42)
	bt.write(2, 0, 99, []byte("hello"))
	rec := sealRecord(&jk, 1, 4096, bt.b, seq(24, 0xe0))
	jin := map[string]string{"key": hx(jk[:]), "segment": "1", "offset": "4096", "nonce": hx(seq(24, 0xe0)), "plaintext": hx(bt.b)}
	vs = append(vs,
		vector{"journal record", "journal", jin, hx(rec), "ok"},
		vector{"journal record, moved to another offset", "journal", map[string]string{"key": hx(jk[:]), "segment": "1", "offset": "0"}, hx(rec), "integrity"},
		vector{"journal record, bad length", "journal", jin, hx(flip(rec, 3)), "integrity"},
	)
	return vs
}

func TestVectors(t *testing.T) {
	vs := makeVectors()
	var fileVs []vector
	testutil.Vectors(t, vectorsPath, &fileVs, func() any { return vs })
	if got, want := mustMarshal(fileVs), mustMarshal(vs); !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the generator (a format change needs a version bump and a written reason; regenerate with -update)", vectorsPath)
	}
	for _, v := range fileVs {
		t.Run(v.Name, func(t *testing.T) {
			err := checkVector(t, v)
			switch v.Result {
			case "ok":
				if err != nil {
					t.Fatalf("want ok, got %v", err)
				}
			case "wrong passphrase":
				if !errors.Is(err, ErrWrongPassphrase) {
					t.Fatalf("want ErrWrongPassphrase, got %v", err)
				}
			case "integrity":
				if !errors.Is(err, ErrIntegrity) {
					t.Fatalf("want ErrIntegrity, got %v", err)
				}
			case "format":
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("want ErrFormat, got %v", err)
				}
			}
		})
	}
}

// checkVector parses a vector's bytes as a reader would and, for good vectors, checks
// that the plaintext matches the inputs.
func checkVector(t *testing.T, v vector) error {
	b := testutil.Unhex(t, v.Bytes)
	in := v.Input
	key32 := func(s string) *[32]byte {
		var k [32]byte
		copy(k[:], testutil.Unhex(t, s))
		return &k
	}
	switch v.Type {
	case "keyfile":
		_, master, err := openKeyFile(b, []byte(in["passphrase"]))
		if err == nil && in["master"] != "" && hx(master) != in["master"] {
			t.Fatalf("master key %x, want %s", master, in["master"])
		}
		return err
	case "container":
		var id [idLen]byte
		copy(id[:], testutil.Unhex(t, in["id"]))
		idx := map[string]uint32{"2": 2, "3": 3}[in["index"]]
		plain, err := openContainer(key32(in["key"]), id, in["kind"][0], idx, vectorGeometry, b)
		if err == nil && in["plaintext"] != "" && hx(plain) != in["plaintext"] {
			t.Fatal("plaintext differs")
		}
		return err
	case "superblock":
		sb, err := decodeSuper(b, vectorGeometry, 4)
		if err == nil && (sb.HasChange != (v.Name == "superblock with last change" || in["tags"] != "") || sb.HasChange && sb.LastChange != 6) {
			t.Fatalf("last change %d (present %v)", sb.LastChange, sb.HasChange)
		}
		if err == nil {
			var tags []string
			for _, tg := range sb.Tags {
				tags = append(tags, fmt.Sprintf("%016x", tg))
			}
			if sb.HasTags != (in["tags"] != "") || strings.Join(tags, " ") != in["tags"] {
				t.Fatalf("tags %q (present %v), want %q", tags, sb.HasTags, in["tags"])
			}
		}
		if err == nil {
			re, _ := sb.encode(vectorGeometry)
			if !bytes.Equal(re, b) {
				t.Fatal("superblock does not re-encode byte for byte")
			}
		}
		return err
	case "page":
		nodes, err := decodePage(0, b, vectorGeometry, 4)
		if err == nil && !bytes.Equal(encodePageV(b[0], 0, nodes), b) {
			t.Fatal("page does not re-encode byte for byte")
		}
		if want := in["versions"]; err == nil && want != "" {
			var got []string
			for _, n := range nodes {
				got = append(got, strconv.FormatUint(n.Ver, 10))
			}
			if strings.Join(got, " ") != want {
				t.Fatalf("versions %q, want %q", got, want)
			}
		}
		return err
	case "journal":
		off := map[string]int64{"0": 0, "4096": 4096}[in["offset"]]
		plain, err := openRecord(key32(in["key"]), 1, off, b)
		if err == nil {
			if hx(plain) != in["plaintext"] {
				t.Fatal("plaintext differs")
			}
			_, _, err = decodeOps(plain)
		}
		return err
	}
	t.Fatalf("unknown vector type %q", v.Type)
	return nil
}

func mustMarshal(v any) []byte { b, _ := json.Marshal(v); return b }
