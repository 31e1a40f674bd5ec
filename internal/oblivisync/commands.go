package oblivisync

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// SyncEpochs opens the writer (recovering its journal), runs epochs back to back and
// closes it: exactly `epochs` of them, or with drain until nothing is pending (at most
// maxEpochs). It is `veil osync sync`: epochs driven by a script rather than a clock.
// It stops between two epochs once ctx is done (Ctrl-C), returning ctx's error: what is
// still pending stays in the journal for the next run.
func SyncEpochs(ctx context.Context, dir string, pass []byte, o Options, epochs int, drain bool, maxEpochs int, onEpoch func(EpochReport)) (Stats, error) {
	w, err := OpenWriter(dir, pass, o)
	if err != nil {
		return Stats{}, err
	}
	defer w.Close()
	for i := 0; ; i++ {
		if drain {
			if w.Stats().PendingInodes == 0 {
				break
			}
			if i >= maxEpochs {
				st := w.Stats()
				return st, fmt.Errorf("still %d bytes pending in %d files after %d epochs", st.PendingBytes, st.PendingInodes, maxEpochs)
			}
		} else if i >= epochs {
			break
		}
		if err := ctx.Err(); err != nil {
			return w.Stats(), err
		}
		rep, err := w.Sync()
		if err != nil {
			return w.Stats(), err
		}
		if onEpoch != nil {
			onEpoch(rep)
		}
	}
	st := w.Stats()
	return st, w.Close()
}

// BackendStatus is what `veil osync status` shows.
type BackendStatus struct {
	Backend  string        `json:"backend"`
	ID       string        `json:"id"`
	Files    int           `json:"files"`
	FileSize int           `json:"file_size"`
	K        int           `json:"drip_rate"`
	DripTime string        `json:"drip_time"`
	Epoch    uint64        `json:"epoch"`
	Inodes   int           `json:"inodes"`
	Used     uint64        `json:"used_bytes"`
	Capacity uint64        `json:"capacity_bytes"`
	Fill     float64       `json:"fill"`
	StateDir string        `json:"state_dir"`
	Writer   *WriterStatus `json:"writer,omitempty"` // nil: no writer state on this machine
}

// WriterStatus is this machine's writer state: read from its journal when no writer
// runs, from the status the running writer publishes after every epoch otherwise.
type WriterStatus struct {
	Running       bool   `json:"running"`
	Source        string `json:"source"` // "journal" or "status.json"
	PendingBytes  uint64 `json:"pending_bytes"`
	PendingFrags  int    `json:"pending_fragments"`
	PendingInodes int    `json:"pending_inodes"`
	JournalBytes  int64  `json:"journal_bytes"`
	Updated       string `json:"updated,omitempty"` // when the running writer published it
	// Behind is set when this state cannot sync (another writer moved the backend on):
	// the error a writer would stop with.
	Behind string `json:"behind,omitempty"`
}

// Status reads the backend's committed state and this machine's writer state (stateDir,
// or stateRoot/<backend id> as Options.StateRoot).
func Status(dir string, pass []byte, stateDir, stateRoot string) (BackendStatus, error) {
	r, err := OpenReader(dir, pass)
	if err != nil {
		return BackendStatus{}, err
	}
	id := hex.EncodeToString(r.be.id[:])
	if stateDir, err = StateDirFor(stateDir, stateRoot, r.be.id); err != nil {
		return BackendStatus{}, err
	}
	st := r.StatFS()
	p := r.be.params
	bs := BackendStatus{Backend: dir, ID: id, Files: p.Files, FileSize: p.FileSize, K: p.K, DripTime: p.DripTime.String(),
		Epoch: r.Epoch(), Inodes: int(st.Inodes), Used: st.Used, Capacity: st.Capacity, StateDir: stateDir}
	if st.Capacity > 0 {
		bs.Fill = float64(st.Used) / float64(st.Capacity)
	}
	bs.Writer, err = writerStatus(r.be, stateDir)
	return bs, err
}

// writerStatus reads the journal of a stopped writer (under its state directory's lock,
// changing nothing), or the published status of a running one.
func writerStatus(be *backend, stateDir string) (*WriterStatus, error) {
	if err := CheckOutside(be.dir, stateDir, "state directory"); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(stateDir, checkpointName)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no writer has run here
	}
	lock, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		m, err := readStatus(stateDir)
		if err != nil || m == nil {
			return &WriterStatus{Running: true, Source: "status.json"}, err
		}
		return &WriterStatus{Running: true, Source: "status.json", PendingBytes: m.PendingBytes, PendingFrags: m.PendingFrags,
			PendingInodes: m.PendingInodes, JournalBytes: m.JournalBytes, Updated: m.Updated}, nil
	}
	w := &Writer{be: be, opts: Options{StateDir: stateDir}, log: slog.New(slog.DiscardHandler), pend: map[fragKey]*pfrag{},
		npend: map[uint64]int{}, dirty: map[uint64]bool{}, opens: map[uint64]int{}, detached: map[uint64]*detachedFile{}}
	if err := w.load(true); err != nil {
		return nil, fmt.Errorf("read the journal in %s: %w", stateDir, err)
	}
	defer w.j.close()
	s := w.stats()
	ws := &WriterStatus{Source: "journal", PendingBytes: s.PendingBytes, PendingFrags: s.PendingFrags,
		PendingInodes: s.PendingInodes, JournalBytes: s.JournalBytes}
	if w.broken != nil {
		ws.Behind = w.broken.Error()
	}
	return ws, nil
}
