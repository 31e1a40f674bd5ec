package oblivisync

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"
)

// EpochReport describes one sync. Its JSON is what `veil osync sync --json` prints per
// epoch: snake_case names, as `veil osync status --json`'s.
type EpochReport struct {
	Epoch         uint64        `json:"epoch"`
	Files         []int         `json:"files_rewritten"`   // backend files rewritten (besides the superblock); not "files", status's N
	BytesWritten  int64         `json:"bytes_written"`     // bytes written to the backend (k+1 files of B bytes)
	FragsSynced   int           `json:"fragments_synced"`  // pending fragments written this epoch
	BytesSynced   int64         `json:"bytes_synced"`      // payload bytes of those fragments
	Committed     int           `json:"inodes_committed"`  // inodes whose new version became visible to readers
	PendingFrags  int           `json:"pending_fragments"` // fragments still in the buffer
	PendingBytes  int64         `json:"pending_bytes"`     // payload bytes still in the buffer
	PendingInodes int           `json:"pending_inodes"`    // inodes not yet committed
	Duration      time.Duration `json:"duration_ns"`       // how long the epoch took, in nanoseconds
}

// TestOnlyAfterBackendWrite, when set (by crash tests only), runs after each of the k
// backend files an epoch writes (filesWritten 1..k, before the superblock) and after the
// superblock (k+1, before the checkpoint): a test kills the process there.
var TestOnlyAfterBackendWrite func(epoch uint64, filesWritten int)

// pickFiles chooses k distinct backend files uniformly at random with crypto/rand.
func pickFiles(n, k int) []uint32 {
	seen := make(map[uint32]bool, k)
	out := make([]uint32, 0, k)
	for len(out) < k {
		v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
		if err != nil {
			panic("crypto/rand failed: " + err.Error())
		}
		f := uint32(v.Int64())
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// gap is free space in one side of a chosen file.
type gap struct {
	slot     int // index into the chosen files
	side     uint8
	off, end int
}

// epochState is the working set of one epoch.
type epochState struct {
	files  []uint32
	slot   map[uint32]int
	plain  [][]byte
	nonces [][]byte // the files' nonces (fileNonce), whose tags the superblock records
	gaps   []gap
}

// place reserves need bytes in the best-fitting gap (smallest that fits).
func (es *epochState) place(need int) (gap, bool) {
	best := -1
	for i, g := range es.gaps {
		if g.end-g.off >= need && (best < 0 || g.end-g.off < es.gaps[best].end-es.gaps[best].off) {
			best = i
		}
	}
	if best < 0 {
		return gap{}, false
	}
	g := es.gaps[best]
	es.gaps[best].off += need
	return gap{slot: g.slot, side: g.side, off: g.off, end: g.off + need}, true
}

// put writes a fragment (header + payload) at g and returns its reference.
func (es *epochState) put(geo geometry, g gap, obj uint64, idx uint32, data []byte) ref {
	p := es.plain[g.slot][geo.sideStart(g.side)+g.off:]
	binary.BigEndian.PutUint64(p, obj)
	binary.BigEndian.PutUint32(p[8:], idx)
	binary.BigEndian.PutUint32(p[12:], uint32(len(data)))
	copy(p[fragHdr:], data)
	return ref{File: es.files[g.slot], Side: g.side, Off: uint32(g.off), Stored: uint32(len(data)), Valid: uint32(len(data))}
}

// Sync runs one epoch: rewrite exactly k random backend files and the superblock. The
// frontend stays usable while the files are written (the slow, fsync-bound part): only
// planning and bookkeeping hold the writer's lock.
func (w *Writer) Sync() (EpochReport, error) { return w.sync(w.prepare) }

// sync is Sync with its epoch planned by planEpoch (w.prepare; a test plans as an older
// writer would), which is called with w.mu held.
func (w *Writer) sync(planEpoch func() (*plan, error)) (EpochReport, error) {
	w.epochMu.Lock()
	defer w.epochMu.Unlock()
	start := time.Now()
	w.mu.Lock()
	if err := w.usable(); err != nil {
		w.mu.Unlock()
		return EpochReport{}, err
	}
	// Still the backend's one writer: the lease names it and the superblock is its own.
	if err := w.stillTheWriter(); err != nil {
		err = w.explain(err)
		w.broken = err
		w.mu.Unlock()
		return EpochReport{}, err
	}
	pl, err := planEpoch()
	jf := w.j.f
	w.mu.Unlock()
	if err == nil {
		err = w.writeEpoch(pl, jf)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.be.setInflight(nil)
	if err == nil {
		err = w.finish(pl)
	}
	if err != nil {
		err = w.explain(err)
		w.broken = err
		return pl.rep, err
	}
	pl.rep.Duration = time.Since(start)
	return pl.rep, nil
}

// explain adds to an epoch's error what it means and what to do, for the failures a user
// can fix: a full disk, a backend folder that went away.
func (w *Writer) explain(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(filepath.Join(w.be.dir, keyFileName)); serr != nil {
			// Found by a user walkthrough: a backend on a share that was unmounted stopped
			// the mount with "recreate lease: open .../.lease.tmp-...: no such file".
			return fmt.Errorf("the backend folder %s is gone (unmounted, moved or deleted?): %w. Every change stays in the journal %s: mount again once the folder is back", w.be.dir, err, w.opts.StateDir)
		}
	}
	return w.explainNoSpace(err)
}

// explainNoSpace adds to an epoch's ENOSPC what it means and what to do: the backend's
// files start sparse, so a backend on a disk smaller than N*B fills it only once enough
// files have been written, long after init (found by a user walkthrough: the mount
// stopped with three raw "no space left on device" errors and no advice).
func (w *Writer) explainNoSpace(err error) error {
	if !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	P := w.be.params
	return fmt.Errorf("%w. A disk is full: the backend %s takes %.1f MiB once each of its %d files has been written (they start sparse), and the journal %s holds what is pending. Free space and mount again: this epoch committed nothing, and every change stays in the journal", err,
		w.be.dir, float64(P.Files)*float64(P.FileSize)/(1<<20), P.Files, w.opts.StateDir)
}

// stillTheWriter checks again, within the epoch, that the lease names this writer and the
// superblock is its own. A writer stalled mid-epoch for longer than its lease's TTL
// (suspended, stopped, a hung disk) may have been taken over meanwhile; found by review:
// resuming, it rewrote the lease as its own and its superblock over the taker's, and the
// taker's committed files vanished. It is checked as the epoch starts (Sync) and again
// before its lease and superblock (reads only: the write trace is unchanged).
func (w *Writer) stillTheWriter() error {
	if err := w.be.checkLeaseOurs(w.lease); err != nil {
		return err
	}
	return w.be.checkSuperOurs()
}

// plan is an epoch between preparation and commit.
type plan struct {
	es      *epochState
	sb      *superblock
	commits map[uint64]*node
	comRefs []ref
	rep     EpochReport
}

// writeEpoch seals and writes the k files in parallel, fsyncs the journal, then writes
// the superblock: a crash before the superblock leaves the previous epoch in force.
func (w *Writer) writeEpoch(pl *plan, jf *os.File) error {
	var mu sync.Mutex
	done := 0
	errs := make([]error, len(pl.es.files))
	var wg sync.WaitGroup
	for i, f := range pl.es.files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = w.be.writeBlock(f, pl.es.plain[i], pl.es.nonces[i]); errs[i] == nil && TestOnlyAfterBackendWrite != nil {
				mu.Lock()
				done++
				TestOnlyAfterBackendWrite(pl.sb.Epoch, done)
				mu.Unlock()
			}
		}()
	}
	var jerr error
	if jf != nil && !w.opts.UnsafeNoFsync {
		// The superblock may commit what these records say: they must be durable first.
		jerr = w.j.fsyncFile(jf)
	}
	wg.Wait()
	if err := errors.Join(append(errs, jerr)...); err != nil {
		return err
	}
	if err := w.stillTheWriter(); err != nil {
		return err
	}
	// Renewed every epoch, busy or idle: the lease write is part of the fixed trace.
	w.lease.Renewed, w.lease.Epoch = time.Now(), pl.sb.Epoch
	if err := w.be.renewLease(w.lease); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	if err := w.be.writeSuper(pl.sb, w.nextNonce); err != nil {
		return err
	}
	if err := w.writeSeen(pl.sb.Epoch, w.be.superNonce); err != nil {
		return err
	}
	if TestOnlyAfterBackendWrite != nil { // k+1: the superblock, before the checkpoint
		TestOnlyAfterBackendWrite(pl.sb.Epoch, len(pl.es.files)+1)
	}
	return nil
}

// prepare plans an epoch: chosen files, their new plaintexts, placements and commits.
func (w *Writer) prepare() (*plan, error) {
	geo, P := w.be.g, w.be.params
	es := &epochState{files: pickFiles(P.Files, P.K), slot: map[uint32]int{}}
	for i, f := range es.files {
		es.slot[f] = i
	}
	// Live fragments in the chosen files stay where they are.
	used := make([][2][][2]int, len(es.files))
	comRefs := w.committedRefs()
	addLive := func(r ref) {
		if s, ok := es.slot[r.File]; ok && !r.isHole() {
			used[s][r.Side] = append(used[s][r.Side], [2]int{int(r.Off), int(r.Off) + r.span()})
		}
	}
	for _, r := range comRefs {
		addLive(r)
	}
	for _, r := range w.prevRefs {
		addLive(r)
	}
	for _, n := range w.cur.nodes {
		for _, r := range n.Frags {
			addLive(r)
		}
	}
	for s, f := range es.files {
		old, err := w.be.readBlock(f, w.sb.Written[f], w.sb.tag(f))
		if err != nil {
			return &plan{}, err
		}
		nw := make([]byte, geo.plain)
		for side := uint8(0); side < 2; side++ {
			iv := used[s][side]
			sort.Slice(iv, func(a, b int) bool { return iv[a][0] < iv[b][0] })
			base, at := geo.sideStart(side), 0
			for _, v := range iv {
				copy(nw[base+v[0]:base+v[1]], old[base+v[0]:base+v[1]])
				if v[0] > at {
					es.gaps = append(es.gaps, gap{slot: s, side: side, off: at, end: v[0]})
				}
				at = max(at, v[1])
			}
			if at < geo.S {
				es.gaps = append(es.gaps, gap{slot: s, side: side, off: at, end: geo.S})
			}
		}
		es.plain = append(es.plain, nw)
	}
	epoch := w.nextEpoch()
	pl := &plan{es: es, comRefs: comRefs, rep: EpochReport{Epoch: epoch}, commits: map[uint64]*node{}}
	pl.sb = &superblock{Epoch: epoch, NextIno: w.nextIno, Written: append([]uint64(nil), w.sb.Written...), Pages: map[uint32]pageLoc{},
		LastChange: w.sb.LastChange, HasChange: true}
	if !w.sb.HasChange { // a superblock from before the field: assume its epoch changed something
		pl.sb.LastChange = w.sb.Epoch
	}
	if tagsFit(w.be.g, P.Files) { // versions of files not written since the field: unknown (0)
		pl.sb.HasTags, pl.sb.Tags = true, make([]uint64, P.Files)
		if w.sb.HasTags {
			copy(pl.sb.Tags, w.sb.Tags)
		}
	}
	for p, loc := range w.sb.Pages {
		pl.sb.Pages[p] = loc
	}
	if pl.sb.HasTags && pl.sb.size() > geo.plain { // an older backend's page table uses their room: without them, as before
		pl.sb.HasTags, pl.sb.Tags = false, nil
	}
	// Metadata first: inodes whose data is already written get their pages before new
	// data can take all the space (otherwise a backlog would hide every file until the
	// whole backlog is written). Then data, then pages of inodes completed just now.
	w.packPages(es, pl.sb, pl.commits)
	if err := w.packData(es, &pl.rep); err != nil {
		return pl, err
	}
	w.packPages(es, pl.sb, pl.commits)
	if len(pl.commits) > 0 { // a page was written or dropped
		pl.sb.LastChange = epoch
	}
	inflight := map[uint32][]byte{}
	for i, f := range es.files {
		binary.BigEndian.PutUint64(es.plain[i], pl.sb.Epoch)
		binary.BigEndian.PutUint32(es.plain[i][8:], f)
		pl.sb.Written[f] = pl.sb.Epoch
		es.nonces = append(es.nonces, fileNonce())
		if pl.sb.HasTags {
			pl.sb.Tags[f] = nonceTag(es.nonces[i])
		}
		pl.rep.Files = append(pl.rep.Files, int(f))
		inflight[f] = es.plain[i]
	}
	w.be.setInflight(inflight) // reads of fragments placed this epoch, until it is on disk
	return pl, nil
}

// nextEpoch numbers the epoch being prepared. Readers holding a file open trust a backend
// file written at most two epochs (by number) after the newest epoch at which they saw the
// file's version committed (reader_pin.go), so the writer never overwrites a location
// that the superblock of epoch X references with a file numbered X+2 or less: each epoch
// keeps the fragments of the previous two committed states (committedRefs and prevRefs).
// A writer that has just started (a restart, a take-over, `veil osync sync`) knows only
// the backend's current state, not the one before it (prevRefs is kept in memory only;
// found by review in session 11: the first epoch after a restart reused the previous
// version's space one epoch early, and a reader that still trusted it read the new
// version's bytes). If the backend's last epoch e changed the committed state (its
// superblock's LastChange is e, or it does not say), the first epoch is numbered e+2
// instead of e+1: every location the state before e referenced and e's does not was last
// committed at e-1 or earlier, and e+2 >= (e-1)+3, so readers that saw it committed at
// e-1 distrust the files this epoch writes (ErrStale) instead of reading new bytes. The
// skipped number is never used; what the backend sees per epoch is unchanged. An
// unchanged state (idle epochs) needs no gap: the state before e is e's own.
func (w *Writer) nextEpoch() uint64 {
	e := w.sb.Epoch
	if !w.prevKnown && e > 0 && (!w.sb.HasChange || w.sb.LastChange == e) {
		return e + 2
	}
	return e + 1
}

// finish applies a written epoch: commits become the committed state.
func (w *Writer) finish(pl *plan) error {
	for ino, n := range pl.commits {
		w.comPut(ino, n)
		delete(w.dirty, ino)
		w.markIfDirty(ino) // changed again while the epoch was being written
	}
	pl.rep.Committed = len(pl.commits)
	w.sb, w.prevRefs, w.prevKnown = pl.sb, pl.comRefs, true
	// An idle epoch (nothing placed, nothing committed) changes no frontend state: its
	// checkpoint is skipped, so a backend may be a few idle epochs ahead of it.
	if pl.rep.FragsSynced > 0 || len(pl.commits) > 0 {
		w.changed = true
	}
	pl.rep.BytesWritten = int64(len(pl.es.files)+1) * int64(w.be.g.B)
	for k := range w.pend {
		pl.rep.PendingFrags++
		pl.rep.PendingBytes += int64(w.fragLen(w.cur.get(k.ino), k.idx))
	}
	pl.rep.PendingInodes = len(w.dirty)
	if err := w.checkpoint(); err != nil {
		return err
	}
	return w.writeStatus()
}

// packData moves pending fragments (oldest first) into free space, best fit.
func (w *Writer) packData(es *epochState, rep *EpochReport) error {
	keys := make([]fragKey, 0, len(w.pend))
	for k := range w.pend {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		pa, pb := w.pend[keys[a]], w.pend[keys[b]]
		if pa.seq != pb.seq {
			return pa.seq < pb.seq
		}
		if keys[a].ino != keys[b].ino {
			return keys[a].ino < keys[b].ino
		}
		return keys[a].idx < keys[b].idx
	})
	for _, k := range keys {
		n := w.cur.get(k.ino)
		length := w.fragLen(n, k.idx)
		g, ok := es.place(fragHdr + length)
		if !ok {
			if len(es.gaps) == 0 {
				break
			}
			continue
		}
		data := make([]byte, length)
		if err := w.readPending(w.pend[k], 0, data); err != nil {
			return err
		}
		n.Frags[k.idx] = es.put(w.be.g, g, k.ino, k.idx, data)
		w.dropPend(k)
		rep.FragsSynced++
		rep.BytesSynced += int64(length)
	}
	return nil
}

// packPages commits every inode whose data is complete: it rebuilds the metadata pages
// they live on and places them; a page that does not fit waits for a later epoch (its
// inodes stay uncommitted, their written fragments stay live).
// commits collects the inodes whose new version the written pages hold; a second call in
// the same epoch rebuilds a page with both rounds' commits (the first copy is left as
// garbage in its side).
func (w *Writer) packPages(es *epochState, sb *superblock, commits map[uint64]*node) {
	ready := map[uint64]bool{}
	for ino := range w.dirty {
		if _, ok := commits[ino]; !ok && w.npend[ino] == 0 && !w.replacedByPending(ino) {
			ready[ino] = true
		}
	}
	// Not before its parent: a file moved into a new directory would otherwise vanish
	// for readers until the directory's record lands. Whole new trees go together.
	anchored := map[uint64]bool{}
	var ok func(ino uint64, depth int) bool
	ok = func(ino uint64, depth int) bool {
		if v, seen := anchored[ino]; seen {
			return v
		}
		n := w.cur.get(ino)
		v := n == nil || n.Parent == 0 || depth > 4096
		if !v {
			p := n.Parent
			v = w.com[p] != nil || commits[p] != nil || (ready[p] && ok(p, depth+1))
		}
		anchored[ino] = v
		return v
	}
	w.holdRemovedDirs(ready, commits, func(ino uint64) bool { return ok(ino, 0) })
	byPage := map[uint32][]uint64{}
	for ino := range ready {
		if ok(ino, 0) {
			byPage[pageOf(ino)] = append(byPage[pageOf(ino)], ino)
		}
	}
	pages := make([]uint32, 0, len(byPage))
	for p := range byPage {
		pages = append(pages, p)
	}
	sort.Slice(pages, func(a, b int) bool { return pages[a] < pages[b] })
	C := w.be.g.C
	for _, p := range pages {
		content := map[uint64]*node{}
		for ino, n := range w.comPages[p] {
			content[ino] = n
		}
		for ino, n := range commits {
			if pageOf(ino) == p {
				if n == nil {
					delete(content, ino)
				} else {
					content[ino] = n
				}
			}
		}
		for _, ino := range byPage[p] {
			if n := w.cur.get(ino); n != nil {
				c := n.clone()
				// The version identity readers pin by: kept while the content is the
				// committed one (a rename, chmod or touch), the committing epoch otherwise.
				// Equal references are equal content: a location the committed record
				// references is live, so nothing new was written there.
				c.Ver = sb.Epoch
				if o := w.com[ino]; o != nil && o.Ver != 0 && o.Size == c.Size && slices.Equal(o.Frags, c.Frags) {
					c.Ver = o.Ver
				}
				content[ino] = c
			} else {
				delete(content, ino)
			}
		}
		nodes := make([]*node, 0, len(content))
		for _, n := range content {
			nodes = append(nodes, n)
		}
		sort.Slice(nodes, func(a, b int) bool { return nodes[a].Ino < nodes[b].Ino })
		if len(nodes) == 0 {
			delete(sb.Pages, p)
		} else {
			data := encodePage(p, nodes)
			saved := append([]gap(nil), es.gaps...)
			var spots []gap
			for off := 0; off < len(data); off += C {
				g, ok := es.place(fragHdr + min(C, len(data)-off))
				if !ok {
					break
				}
				spots = append(spots, g)
			}
			if len(spots) != fragCount(uint64(len(data)), C) {
				es.gaps = saved
				continue
			}
			prev, had := sb.Pages[p]
			sb.Pages[p] = pageLoc{Size: uint32(len(data)), Frags: make([]ref, len(spots))}
			if sb.size() > w.be.g.plain { // the page table would overflow the superblock: wait
				if es.gaps = saved; had {
					sb.Pages[p] = prev
				} else {
					delete(sb.Pages, p)
				}
				continue
			}
			pl := pageLoc{Size: uint32(len(data))}
			for i, g := range spots {
				chunk := data[i*C : min(len(data), (i+1)*C)]
				pl.Frags = append(pl.Frags, es.put(w.be.g, g, pageObj(p), uint32(i), chunk))
			}
			sb.Pages[p] = pl
		}
		for _, ino := range byPage[p] {
			commits[ino] = content[ino] // nil: deleted
		}
	}
}

// holdRemovedDirs keeps a removed directory committed while an inode committed under it
// has not committed its move out (or its removal) yet: `mv d/f f; rmdir d` with f's new
// data still pending used to commit d's removal at once, so f's committed record (still
// under d) was orphaned and f vanished for readers, and for a writer starting from the
// backend alone, until f's data was synced (found by review:
// TestMoveOutThenRmdirStaysVisible). A removed directory has no children in the current
// tree, so holding it back anchors no one else's commit.
func (w *Writer) holdRemovedDirs(ready map[uint64]bool, commits map[uint64]*node, anchored func(uint64) bool) {
	var kids map[uint64][]uint64
	for changed := true; changed; {
		changed = false
		for ino := range ready {
			if c := w.com[ino]; c == nil || !c.isDir() || w.cur.get(ino) != nil {
				continue
			}
			if kids == nil {
				kids = map[uint64][]uint64{}
				for k, n := range w.com {
					kids[n.Parent] = append(kids[n.Parent], k)
				}
			}
			for _, k := range kids[ino] {
				if _, done := commits[k]; !done && !(ready[k] && anchored(k)) {
					delete(ready, ino)
					changed = true
					break
				}
			}
		}
	}
}

// replacedByPending reports a deleted inode whose name now belongs to an inode whose data
// is still pending (the "write temp file, rename over the original" save): the old
// version stays visible to readers until the new one can replace it.
func (w *Writer) replacedByPending(ino uint64) bool {
	if w.cur.get(ino) != nil {
		return false
	}
	c := w.com[ino]
	if c == nil {
		return false
	}
	x := w.cur.lookup(c.Parent, c.Name)
	return x != nil && w.npend[x.Ino] > 0
}
