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
	_, err := w.tick(ctx, nil, onEpoch)
	return err
}

// Drain keeps the drip schedule until every pending change is committed, or ctx ends; in
// that case it returns an error saying what is still pending (it stays in the journal).
func (w *Writer) Drain(ctx context.Context, onEpoch func(EpochReport)) error {
	st, err := w.tick(ctx, func(st Stats) bool { return st.PendingInodes == 0 }, onEpoch)
	if err == nil && st.PendingInodes > 0 {
		err = fmt.Errorf("%d bytes in %d fragments (%d files or directories) still pending; they stay in the local journal %s and sync the next time this backend is mounted or 'veil osync sync' runs",
			st.PendingBytes, st.PendingFrags, st.PendingInodes, w.opts.StateDir)
	}
	return err
}

// tick runs an epoch per drip time until ctx ends or done (checked before each) holds.
func (w *Writer) tick(ctx context.Context, done func(Stats) bool, onEpoch func(EpochReport)) (Stats, error) {
	t := time.NewTicker(w.be.params.DripTime)
	defer t.Stop()
	for {
		if done != nil {
			if st := w.Stats(); done(st) {
				return st, nil
			}
		}
		select {
		case <-ctx.Done():
			return w.Stats(), nil
		case <-t.C:
		}
		rep, err := w.Sync()
		if err != nil {
			return Stats{}, err
		}
		if onEpoch != nil {
			onEpoch(rep)
		}
	}
}

// StateDir is where this writer keeps its journal.
func (w *Writer) StateDir() string { return w.opts.StateDir }
