package oblivisync

// committedRefs lists every fragment the committed superblock references.
func (w *Writer) committedRefs() []ref {
	var out []ref
	for _, pl := range w.sb.Pages {
		out = append(out, pl.Frags...)
	}
	for _, n := range w.com {
		for _, r := range n.Frags {
			if !r.isHole() {
				out = append(out, r)
			}
		}
	}
	return out
}

// Stats are the writer's numbers for status and benchmarks.
type Stats struct {
	Epoch          uint64
	Capacity       uint64 // payload bytes the backend can hold (N * 2 * S)
	Used           uint64 // bytes occupied by live fragments and headers
	PendingBytes   uint64
	PendingFrags   int
	PendingInodes  int
	JournalBytes   int64
	Inodes         int
	Committed      int // committed inodes
	CommittedFiles int // committed regular files (what readers see)
}

func (w *Writer) stats() Stats {
	seen := map[loc]bool{}
	var used uint64
	add := func(r ref) {
		if !r.isHole() && !seen[r.loc()] {
			seen[r.loc()] = true
			used += uint64(r.span())
		}
	}
	for _, r := range w.committedRefs() {
		add(r)
	}
	for _, n := range w.cur.nodes {
		for _, r := range n.Frags {
			add(r)
		}
	}
	st := Stats{Epoch: w.sb.Epoch, Capacity: uint64(w.be.params.Files) * 2 * uint64(w.be.g.S), Used: used,
		PendingFrags: len(w.pend), PendingInodes: len(w.dirty), Inodes: len(w.cur.nodes), Committed: len(w.com)}
	if w.j != nil {
		st.JournalBytes = w.j.size
	}
	for _, n := range w.com {
		if n.isReg() {
			st.CommittedFiles++
		}
	}
	for k := range w.pend {
		st.PendingBytes += uint64(w.fragLen(w.cur.get(k.ino), k.idx))
	}
	return st
}

// Stats returns current figures.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats()
}

// FragmentSize is C, the payload of one full block: a file of 2*C bytes fills exactly
// one backend file (a block pair), the paper's "1 MB file".
func (w *Writer) FragmentSize() int { return w.be.g.C }

// Params returns the backend's parameters.
func (w *Writer) Params() Params { return w.be.params }

// maxFileSize bounds a regular file's size: the backend's payload capacity (N*2*C). The
// writer keeps one fragment reference per C bytes of size, holes included.
func (w *Writer) maxFileSize() uint64 { return fileSizeLimit(w.be.g, w.be.params.Files) }

func fileSizeLimit(g geometry, nfiles int) uint64 { return uint64(nfiles) * 2 * uint64(g.C) }
