package oblivisync

import (
	"context"
	"fmt"
	"time"
)

// Run syncs one epoch every drip time until ctx is done. The schedule is the same whether
// or not anything is pending (a ticker, never "sync when dirty"), so timing leaks nothing.
// onEpoch, if set, sees every epoch's report. An epoch failure stops the loop.
func (w *Writer) Run(ctx context.Context, onEpoch func(EpochReport)) error {
	t := time.NewTicker(w.be.params.DripTime)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rep, err := w.Sync()
		if err != nil {
			return err
		}
		if onEpoch != nil {
			onEpoch(rep)
		}
	}
}

// Drain keeps the drip schedule until every pending change is committed, or ctx ends; in
// that case it returns an error saying what is still pending (it stays in the journal).
func (w *Writer) Drain(ctx context.Context, onEpoch func(EpochReport)) error {
	t := time.NewTicker(w.be.params.DripTime)
	defer t.Stop()
	for {
		st := w.Stats()
		if st.PendingInodes == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d bytes in %d fragments (%d files or directories) still pending; they stay in the local journal %s and sync the next time this backend is mounted or 'veil osync sync' runs",
				st.PendingBytes, st.PendingFrags, st.PendingInodes, w.opts.StateDir)
		case <-t.C:
		}
		rep, err := w.Sync()
		if err != nil {
			return err
		}
		if onEpoch != nil {
			onEpoch(rep)
		}
	}
}

// StateDir is where this writer keeps its journal.
func (w *Writer) StateDir() string { return w.opts.StateDir }
