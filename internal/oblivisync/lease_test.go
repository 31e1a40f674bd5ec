package oblivisync

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

const leaseVectorsPath = "../../testdata/oblivisync/lease.json"

func vectorLease() (key [32]byte, id [idLen]byte, l *lease) {
	copy(key[:], seq(32, 0x10))
	copy(id[:], seq(idLen, 0x40))
	l = &lease{Acquired: time.UnixMilli(1_700_000_000_000), Renewed: time.UnixMilli(1_700_000_060_000),
		TTL: 2 * time.Minute, Epoch: 0x0102030405060708, Host: "laptop"}
	copy(l.Writer[:], seq(writerIDLen, 0xa0))
	return key, id, l
}

// TestLeaseVectors pins the lease file and the writer-id file byte for byte, with files
// that must be refused.
func TestLeaseVectors(t *testing.T) {
	key, id, l := vectorLease()
	var vs []vector
	testutil.Vectors(t, leaseVectorsPath, &vs, func() any {
		ok := sealLease(&key, id, l, seq(24, 0x60))
		in := map[string]string{"key": hx(key[:]), "backend_id": hx(id[:]), "writer": hx(l.Writer[:]),
			"acquired_ms": "1700000000000", "renewed_ms": "1700000060000", "ttl_ms": "120000", "epoch": "72623859790382856", "host": "laptop"}
		ver := append([]byte(nil), ok...)
		ver[0] = 2
		var wid [writerIDLen]byte
		copy(wid[:], seq(writerIDLen, 0xa0))
		return []vector{
			{"lease", "lease", in, hx(ok), "ok"},
			{"lease, ciphertext bit flipped", "lease", in, hx(flip(ok, len(ok)-1)), "integrity"},
			{"lease, other backend", "lease", map[string]string{"key": hx(key[:]), "backend_id": hx(seq(idLen, 0x41))}, hx(ok), "integrity"},
			{"lease, version 2", "lease", in, hx(ver), "format"},
			{"lease, truncated", "lease", in, hx(ok[:len(ok)-1]), "format"},
			{"writer-id", "writer-id", map[string]string{"writer": hx(wid[:])}, hx(encodeWriterID(wid)), "ok"},
			{"writer-id, upper case", "writer-id", nil, hx([]byte("A0A1A2A3A4A5A6A7A8A9AAABACADAEAF\n")), "format"},
			{"writer-id, no newline", "writer-id", nil, hx([]byte(hx(wid[:]))), "format"},
		}
	})
	if len(vs) != 8 {
		t.Fatalf("%d vectors", len(vs))
	}
	for _, v := range vs {
		b := testutil.Unhex(t, v.Bytes)
		if v.Type == "writer-id" {
			wid, err := decodeWriterID(b)
			if v.Result == "ok" && (err != nil || hx(wid[:]) != v.Input["writer"] || !bytes.Equal(encodeWriterID(wid), b)) {
				t.Fatalf("%s: %x %v", v.Name, wid, err)
			}
			if v.Result == "format" && !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: got %v, want ErrFormat", v.Name, err)
			}
			continue
		}
		var k [32]byte
		var bid [idLen]byte
		copy(k[:], testutil.Unhex(t, v.Input["key"]))
		copy(bid[:], testutil.Unhex(t, v.Input["backend_id"]))
		got, err := openLease(&k, bid, b)
		switch v.Result {
		case "ok":
			if err != nil || hx(got.Writer[:]) != v.Input["writer"] || got.Host != v.Input["host"] || got.TTL != 2*time.Minute ||
				!got.Renewed.Equal(l.Renewed) || !got.Acquired.Equal(l.Acquired) || got.Epoch != l.Epoch {
				t.Fatalf("%s: %+v %v", v.Name, got, err)
			}
			if re := sealLease(&k, bid, got, b[1:25]); !bytes.Equal(re, b) {
				t.Fatalf("%s: re-sealing differs", v.Name)
			}
		case "integrity":
			if !errors.Is(err, ErrIntegrity) {
				t.Fatalf("%s: got %v, want ErrIntegrity", v.Name, err)
			}
		case "format":
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: got %v, want ErrFormat", v.Name, err)
			}
		}
	}
}

func FuzzOpenLease(f *testing.F) {
	raw, err := os.ReadFile(leaseVectorsPath)
	if err != nil {
		f.Fatal(err)
	}
	var vs []vector
	json.Unmarshal(raw, &vs)
	for _, v := range vs {
		b, _ := hex.DecodeString(v.Bytes)
		f.Add(b)
	}
	key, id, l := vectorLease()
	f.Add(l.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, err := openLease(&key, id, b); err == nil && got.Writer != l.Writer {
			t.Fatalf("forged lease authenticated: %+v", got)
		}
		// The plaintext decoder on its own, as if the AEAD had passed: what it accepts
		// encodes back to the same bytes.
		if got, err := decodeLease(b); err == nil && !bytes.Equal(got.encode(), b) {
			t.Fatalf("decodeLease accepted %x, re-encodes as %x", b, got.encode())
		}
	})
}

// A lease left by a writer that crashed on another machine is refused while it is fresh
// and taken over once it is older than its TTL; one left by this state directory's own
// writer is taken over at once.
func TestLeaseTakeOver(t *testing.T) {
	dir := newBackend(t, 8, 16<<10, 2)
	stA, stB := t.TempDir(), t.TempDir()
	a := openW(t, dir, stA)
	aLease := must(os.ReadFile(filepath.Join(dir, leaseName)))
	a.lease = nil // crash: the lease stays behind
	a.closeFiles()
	os.WriteFile(filepath.Join(dir, leaseName), aLease, 0o600)

	_, err := OpenWriter(dir, testPass, Options{StateDir: stB, UnsafeNoFsync: true})
	wantErr(t, err, ErrLeased, "if it crashed wait until its lease expires")

	a = openW(t, dir, stA) // the same state directory: its own lease, taken at once
	if _, err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	a.lease.Renewed = time.Now().Add(-DefaultLeaseTTL - time.Second) // last renewed long ago
	if err := a.be.renewLease(a.lease); err != nil {
		t.Fatal(err)
	}
	a.lease = nil
	a.closeFiles()
	b := openW(t, dir, stB) // expired: taken over
	defer b.Close()
	if _, err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	l := must(b.be.readLease())
	if l.Writer != b.id || l.Writer == a.id {
		t.Fatalf("lease names %x, want the new writer %x", l.Writer, b.id)
	}
	_, err = OpenWriter(dir, testPass, Options{StateDir: stA, UnsafeNoFsync: true})
	wantErr(t, err, ErrLeased, "holds it")
	b.Close()
	if _, err := os.Stat(filepath.Join(dir, leaseName)); err == nil {
		t.Fatal("lease still in the backend after the writer closed")
	}
	_, err = OpenWriter(dir, testPass, Options{StateDir: stA, UnsafeNoFsync: true})
	wantErr(t, err, ErrBehind, "veil osync adopt")
}

// A writer whose state directory is behind the backend (another writer synced since)
// refuses to start; Adopt sets its journal aside and it then follows the backend; a
// state that is not behind is not adopted.
func TestAdopt(t *testing.T) {
	dir, stA, stB, f := behindWriter(t)

	_, err := OpenWriter(dir, testPass, Options{StateDir: stA, UnsafeNoFsync: true})
	wantErr(t, err, ErrBehind, "adopt --backend")
	_, err = Adopt(dir, testPass, stB, "")
	wantErr(t, err, ErrInvalid, "not behind")
	rep, err := Adopt(dir, testPass, stA, "")
	if err != nil || rep.SetAside == "" || len(rep.Moved) < 3 || rep.PendingFragments != 1 {
		t.Fatalf("adopt: %+v %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(rep.SetAside, checkpointName)); err != nil {
		t.Fatal("old checkpoint not kept:", err)
	}
	a := openW(t, dir, stA)
	defer a.Close()
	buf := make([]byte, 16)
	if n, err := a.Read(f.Ino, 0, buf); err != nil || string(buf[:n]) != "v2" {
		t.Fatalf("after adopt: %q %v, want v2", buf[:n], err)
	}
	if st := a.Stats(); st.PendingInodes != 0 {
		t.Fatalf("adopted writer has pending changes: %+v", st)
	}
}

// FuzzDecodeSeen: any bytes give a record or ErrFormat; an accepted record re-encodes to
// the same bytes.
func FuzzDecodeSeen(f *testing.F) {
	raw, err := os.ReadFile(seenVectorsPath)
	if err != nil {
		f.Fatal(err)
	}
	var vs []vector
	json.Unmarshal(raw, &vs)
	for _, v := range vs {
		b, _ := hex.DecodeString(v.Bytes)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeSeen(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		re := encodeSeen(r.Epoch, r.Nonce)
		if r.V2 {
			re = encodeSeen2(r)
		}
		if !bytes.Equal(re, b) {
			t.Fatalf("accepted %x, re-encodes as %x", b, re)
		}
	})
}

// FuzzDecodeWriterID: an accepted writer-id re-encodes to the same bytes.
func FuzzDecodeWriterID(f *testing.F) {
	f.Add([]byte("a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\n"))
	f.Add([]byte("A0A1A2A3A4A5A6A7A8A9AAABACADAEAF\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := decodeWriterID(b)
		if err == nil && !bytes.Equal(encodeWriterID(id), b) {
			t.Fatalf("accepted %q, re-encodes as %q", b, encodeWriterID(id))
		}
	})
}

// A lease that vanishes under a running writer (deleted by hand or by the sync service)
// is created again at the next epoch rather than stopping the writer.
func TestLeaseRecreatedWhenDeleted(t *testing.T) {
	dir := newBackend(t, 8, 16<<10, 2)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	os.Remove(filepath.Join(dir, leaseName))
	if _, err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if l := must(w.be.readLease()); l == nil || l.Writer != w.id {
		t.Fatalf("lease after the epoch: %+v", l)
	}
}

// An adoption cut short by a crash after any file it moves can be run again, and the
// writer then follows the backend (it used to move `seen` before the journal segments: a
// crash in between left segments without a checkpoint and no record; the writer refused
// them as corrupt and adopt said nothing was behind).
func TestAdoptInterruptedCanBeRerun(t *testing.T) {
	defer func() { testOnlyAdoptMoved = nil }()
	for stop := 1; ; stop++ {
		dir, stA, _, f := behindWriter(t)

		moved := 0
		testOnlyAdoptMoved = func(string) {
			if moved++; moved == stop {
				panic("crash")
			}
		}
		crashed := func() (c bool) {
			defer func() { c = recover() != nil }()
			Adopt(dir, testPass, stA, "")
			return false
		}()
		testOnlyAdoptMoved = nil
		if !crashed {
			return // stop is past the last file moved
		}
		w, err := OpenWriter(dir, testPass, Options{StateDir: stA, UnsafeNoFsync: true})
		if errors.Is(err, ErrBehind) {
			if _, err := Adopt(dir, testPass, stA, ""); err != nil {
				t.Fatalf("crash after %d moves: adopt again: %v", stop, err)
			}
			w, err = OpenWriter(dir, testPass, Options{StateDir: stA, UnsafeNoFsync: true})
		}
		if err != nil {
			t.Fatalf("crash after %d moves: writer: %v", stop, err)
		}
		buf := make([]byte, 16)
		if n, err := w.Read(f.Ino, 0, buf); err != nil || string(buf[:n]) != "v2" {
			t.Fatalf("crash after %d moves: %q %v, want v2", stop, buf[:n], err)
		}
		w.Close()
	}
}

// behindWriter makes a backend whose writer A (state stA) synced "v1" to file f, wrote
// "v3, never synced" and closed, after which writer B (state stB) synced "v2": A's state
// is behind the backend.
func behindWriter(t *testing.T) (dir, stA, stB string, f Attr) {
	t.Helper()
	dir = newBackend(t, 8, 16<<10, 2)
	stA, stB = t.TempDir(), t.TempDir()
	a := openW(t, dir, stA)
	f = must(a.Create(rootIno, "f", 0o644, 0, 0))
	must(a.Write(f.Ino, 0, []byte("v1")))
	drain(t, a, 50)
	must(a.Write(f.Ino, 0, []byte("v3, never synced")))
	a.Close()
	b := openW(t, dir, stB)
	must(b.Write(f.Ino, 0, []byte("v2")))
	drain(t, b, 50)
	b.Close()
	return dir, stA, stB, f
}
