package oblivisync

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// The checkpoint is the writer's full frontend state at a journal position; recovery
// loads it and replays the journal records after that position.
//
//	file = version u8 (1) | nonce [24] | XChaCha20-Poly1305(body, aad = "veil-osync-checkpoint-v1")
//	body = epoch u64 | seq u64 | seg u32 | off u64 | nextIno u64 | count u32 | node* |
//	       npend u32 | (ino u64 | idx u32 | seq u64 | next u32 | extent*)*
//	extent = off u32 | len u32 | seg u32 | record u64 | data u32
const (
	checkpointName    = "checkpoint"
	checkpointVersion = 1
	checkpointAAD     = "veil-osync-checkpoint-v1"
	statusName        = "status.json"
)

type checkpointData struct {
	epoch, seq, nextIno uint64
	seg                 uint32
	off                 int64
	cur                 *tree
	pend                map[fragKey]*pfrag
}

// checkpoint writes the current state (if it changed), then deletes journal segments
// that nothing pending refers to any more, and refreshes status.json.
func (w *Writer) checkpoint() error {
	if !w.changed {
		return nil
	}
	if err := w.compactJournal(); err != nil {
		return err
	}
	refSegs := map[uint32]bool{}
	for _, pf := range w.pend {
		for _, e := range pf.ext {
			refSegs[e.seg] = true
		}
	}
	if !refSegs[w.j.seg] && w.j.off > 0 { // nothing pending in the live segment: start afresh
		if err := w.j.rotate(); err != nil {
			return err
		}
	}
	if err := w.j.sync(); err != nil {
		return err
	}
	b := w.checkpointBody()
	aead, _ := chacha20poly1305.NewX(w.be.keys.journal[:])
	nonce := randomBytes(chacha20poly1305.NonceSizeX)
	out := append([]byte{checkpointVersion}, nonce...)
	out = aead.Seal(out, nonce, b, []byte(checkpointAAD))
	if err := writeAtomic(filepath.Join(w.opts.StateDir, checkpointName), out, !w.opts.UnsafeNoFsync); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	w.changed = false
	w.j.gc(w.j.seg, refSegs)
	return nil
}

// writeStatus publishes status.json for `veil osync status` (local, not fsynced).
func (w *Writer) writeStatus() error {
	st := w.stats()
	js, _ := json.Marshal(statusFile{Epoch: st.Epoch, PendingBytes: st.PendingBytes, PendingFrags: st.PendingFrags,
		PendingInodes: st.PendingInodes, JournalBytes: st.JournalBytes, Used: st.Used, Capacity: st.Capacity,
		Updated: time.Now().UTC().Format(time.RFC3339)})
	return writeAtomic(filepath.Join(w.opts.StateDir, statusName), js, false)
}

// compactJournal re-images pending fragments held in old segments once the journal is
// more than twice the pending bytes (plus slack), so the old segments can be deleted.
// The cost is amortised: each compaction at least halves the journal.
func (w *Writer) compactJournal() error {
	var pending int64
	for k := range w.pend {
		pending += int64(w.fragLen(w.cur.get(k.ino), k.idx))
	}
	if w.j.size <= 2*pending+w.j.segMax() {
		return nil
	}
	for k, pf := range w.pend {
		old := false
		for _, e := range pf.ext {
			old = old || (e.seg != zeroSeg && e.seg != w.j.seg)
		}
		if !old {
			continue
		}
		n := w.cur.get(k.ino)
		buf := make([]byte, w.fragLen(n, k.idx))
		if err := w.readPending(pf, 0, buf); err != nil {
			return err
		}
		bt := newBatch(w.seq + 1)
		bt.image(k.ino, k.idx, buf)
		if err := w.commitBatch(bt); err != nil {
			return err
		}
	}
	return nil
}

// checkpointBody encodes the writer's state (see the format above).
func (w *Writer) checkpointBody() []byte {
	be := binary.BigEndian
	b := be.AppendUint64(nil, w.sb.Epoch)
	b = be.AppendUint64(b, w.seq)
	b = be.AppendUint32(b, w.j.seg)
	b = be.AppendUint64(b, uint64(w.j.off))
	b = be.AppendUint64(b, w.nextIno)
	b = be.AppendUint32(b, uint32(len(w.cur.nodes)))
	for _, n := range w.cur.nodes {
		b = appendNode(b, n)
	}
	b = be.AppendUint32(b, uint32(len(w.pend)))
	for k, pf := range w.pend {
		b = be.AppendUint64(b, k.ino)
		b = be.AppendUint32(b, k.idx)
		b = be.AppendUint64(b, pf.seq)
		b = be.AppendUint32(b, uint32(len(pf.ext)))
		for _, e := range pf.ext {
			b = be.AppendUint32(b, e.off)
			b = be.AppendUint32(b, e.n)
			b = be.AppendUint32(b, e.seg)
			b = be.AppendUint64(b, uint64(e.rec))
			b = be.AppendUint32(b, e.data)
		}
	}
	return b
}

// statusFile is the writer's last published status (state dir, plain JSON, local only).
type statusFile struct {
	Epoch         uint64 `json:"epoch"`
	PendingBytes  uint64 `json:"pending_bytes"`
	PendingFrags  int    `json:"pending_fragments"`
	PendingInodes int    `json:"pending_inodes"`
	JournalBytes  int64  `json:"journal_bytes"`
	Used          uint64 `json:"used_bytes"`
	Capacity      uint64 `json:"capacity_bytes"`
	Updated       string `json:"updated"`
}

// readCheckpoint returns nil, nil when there is no checkpoint yet.
func readCheckpoint(dir string, key *[32]byte, g geometry, nfiles int) (*checkpointData, error) {
	raw, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	bad := func(what string) error {
		return fmt.Errorf("%w: journal checkpoint in %s: %s", ErrIntegrity, dir, what)
	}
	if len(raw) < 1+chacha20poly1305.NonceSizeX+chacha20poly1305.Overhead || raw[0] != checkpointVersion {
		return nil, bad("bad header")
	}
	aead, _ := chacha20poly1305.NewX(key[:])
	b, err := aead.Open(nil, raw[1:25], raw[25:], []byte(checkpointAAD))
	if err != nil {
		return nil, bad("failed authentication (wrong key or tampered)")
	}
	ck, err := decodeCheckpoint(b, g, nfiles)
	if err != nil {
		return nil, bad(err.Error())
	}
	return ck, nil
}

// decodeCheckpoint parses an (authenticated) checkpoint body.
func decodeCheckpoint(b []byte, g geometry, nfiles int) (*checkpointData, error) {
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrFormat, what) }
	be := binary.BigEndian
	if len(b) < 44 {
		return nil, bad("truncated")
	}
	ck := &checkpointData{epoch: be.Uint64(b), seq: be.Uint64(b[8:]), seg: be.Uint32(b[16:]),
		off: int64(be.Uint64(b[20:])), nextIno: be.Uint64(b[28:]), cur: newTree(), pend: map[fragKey]*pfrag{}}
	count := int(be.Uint32(b[36:]))
	b = b[40:]
	for i := 0; i < count; i++ {
		n, used, err := decodeNode(b, g, nfiles)
		if err != nil {
			return nil, err
		}
		ck.cur.put(n)
		b = b[used:]
	}
	if len(b) < 4 {
		return nil, bad("truncated")
	}
	np := int(be.Uint32(b))
	b = b[4:]
	for i := 0; i < np; i++ {
		if len(b) < 24 {
			return nil, bad("truncated pending table")
		}
		k := fragKey{be.Uint64(b), be.Uint32(b[8:])}
		pf := &pfrag{seq: be.Uint64(b[12:])}
		ne := int(be.Uint32(b[20:]))
		b = b[24:]
		if ne > len(b)/24 {
			return nil, bad("truncated extents")
		}
		for j := 0; j < ne; j++ {
			pf.ext = append(pf.ext, extent{off: be.Uint32(b), n: be.Uint32(b[4:]), seg: be.Uint32(b[8:]),
				rec: int64(be.Uint64(b[12:])), data: be.Uint32(b[20:])})
			b = b[24:]
		}
		n := ck.cur.get(k.ino)
		if n == nil || int(k.idx) >= len(n.Frags) {
			return nil, bad("pending fragment of a missing inode")
		}
		ck.pend[k] = pf
	}
	return ck, nil
}

// readStatus returns the last status a writer published in stateDir (nil if none).
func readStatus(stateDir string) (*statusFile, error) {
	raw, err := os.ReadFile(filepath.Join(stateDir, statusName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m statusFile
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", statusName, err)
	}
	return &m, nil
}
