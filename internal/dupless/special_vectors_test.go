package dupless

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const recordV3VectorFile = "../../testdata/dupless/records-v3.json"

// TestRecordV3Vectors checks the version 3 records (special files) byte for byte, and
// the ones that must be rejected: a special type under version 2, another type under
// version 3, a socket's mode.
func TestRecordV3Vectors(t *testing.T) {
	var v []recordVector
	testutil.Vectors(t, recordV3VectorFile, &v, func() any { return genRecordV3Vectors() })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	checkRecordVectors(t, k, v)
}

func genRecordV3Vectors() []recordVector {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	nonce := bytes.Repeat([]byte{0x07}, recordHeader-1)
	path := "ENCDIR/ENCNAME.key"
	var out []recordVector
	ok := func(comment string, r *record) {
		out = append(out, recordVector{Comment: comment, EncPath: path, Record: r,
			Sealed: hex.EncodeToString(k.sealRecordNonce(r, path, nonce)), Result: "ok"})
	}
	ok("a FIFO, mode 0640", &record{Type: typeSpecial, Mode: modeFIFO | 0o640, MTime: 1_700_000_000_123_456_789})
	ok("a character device 1:3 (/dev/null)", &record{Type: typeSpecial, Mode: modeCharDev | 0o666, MTime: 1_700_000_000_000_000_000, Rdev: 0x103})
	// Rejects: sealed with a forced version, as a wrong writer would.
	seal := func(version byte, plain []byte) string {
		o := make([]byte, recordHeader, recordHeader+len(plain)+32)
		o[0] = version
		copy(o[1:], nonce)
		return hex.EncodeToString(k.records.Seal(o, o[1:recordHeader], plain, recordAD(version, path)))
	}
	bad := func(comment, sealed string) {
		out = append(out, recordVector{Comment: comment, EncPath: path, Sealed: sealed, Result: "reject"})
	}
	fifo := &record{Type: typeSpecial, Mode: modeFIFO | 0o644}
	v2 := (&record{Type: typeFile}).marshal() // no Rdev field
	v2[0] = typeSpecial
	bad("authentic version 2 record of type 4 (special types need version 3)", seal(recordVersion, v2))
	file := fifo.marshal()
	file[0] = typeFile
	bad("authentic version 3 record of type 1", seal(recordVersion3, file))
	sock := &record{Type: typeSpecial, Mode: 0o140000 | 0o755}
	bad("authentic version 3 record of a socket (never stored)", seal(recordVersion3, sock.marshal()))
	return out
}
