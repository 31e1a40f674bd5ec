package oblivisync

import (
	"encoding/hex"
	"fmt"
)

// SyncEpochs opens the writer (recovering its journal), runs epochs back to back and
// closes it: exactly `epochs` of them, or with drain until nothing is pending (at most
// maxEpochs). It is `veil osync sync`: epochs driven by a script rather than a clock.
func SyncEpochs(dir string, pass []byte, o Options, epochs int, drain bool, maxEpochs int, onEpoch func(EpochReport)) (Stats, error) {
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
	Backend  string         `json:"backend"`
	ID       string         `json:"id"`
	Files    int            `json:"files"`
	FileSize int            `json:"file_size"`
	K        int            `json:"drip_rate"`
	DripTime string         `json:"drip_time"`
	Epoch    uint64         `json:"epoch"`
	Inodes   int            `json:"inodes"`
	Used     uint64         `json:"used_bytes"`
	Capacity uint64         `json:"capacity_bytes"`
	Fill     float64        `json:"fill"`
	StateDir string         `json:"state_dir"`
	Writer   map[string]any `json:"writer,omitempty"` // the local writer's last status.json
}

// Status reads the backend's committed state and this machine's writer status file.
func Status(dir string, pass []byte, stateDir string) (BackendStatus, error) {
	r, err := OpenReader(dir, pass)
	if err != nil {
		return BackendStatus{}, err
	}
	id := hex.EncodeToString(r.be.id[:])
	if stateDir == "" {
		stateDir = DefaultStateDir(id)
	}
	st := r.StatFS()
	p := r.be.params
	bs := BackendStatus{Backend: dir, ID: id, Files: p.Files, FileSize: p.FileSize, K: p.K, DripTime: p.DripTime.String(),
		Epoch: r.Epoch(), Inodes: int(st.Inodes), Used: st.Used, Capacity: st.Capacity, StateDir: stateDir}
	if st.Capacity > 0 {
		bs.Fill = float64(st.Used) / float64(st.Capacity)
	}
	bs.Writer, err = readStatus(stateDir)
	return bs, err
}
