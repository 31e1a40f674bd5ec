package dupless

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Following the newest root (veil mount's current/). A mount runs for days while other
// commands, on this device or others, publish roots; Follow lets it show them. Asking
// costs one request: the root after current's number is absent until a command publishes
// it (forget never drops the newest root, rootprobe.go), so a STAT answered "not found"
// says nothing changed; asked half a day or more after the last check, Follow STATs
// current's root too (followLate). Only when it is present does Follow read the newest root as every
// command does (refresh: checked against this device's memory of the roots, so a storage
// rolled back is refused as by any command) and list the roots again.

// Follow makes the newest root current when a command published one since the Catalog was
// opened or last followed. It returns the view that was current before: nil when nothing
// changed or there was no root before (without one, asking is a LIST of the roots). That
// view stays readable, as a snapshot the Catalog holds. One Follow runs at a time: another
// waits for it (or for ctx), then asks again.
func (k *Catalog) Follow(ctx context.Context) (prev *View, err error) {
	if err := k.follow.lock(ctx); err != nil {
		return nil, err
	}
	defer k.follow.unlock()
	prev = k.Current()
	start := time.Now()
	if prev != nil {
		newer, err := k.newer(ctx, prev.Snap.Seq, start.Sub(k.confirmed) >= followLate)
		if err != nil || !newer {
			if err == nil {
				k.confirmed = start
			}
			return nil, err
		}
	} else if written, _, err := k.c.rootSizes(ctx); err != nil || len(written) == 0 {
		return nil, err // no root yet: one LIST
	}
	if err := k.c.refresh(ctx); err != nil {
		return nil, err
	}
	k.c.view.mu.Lock()
	newest := k.c.view.newest
	k.c.view.mu.Unlock()
	if newest == nil || prev != nil && newest.Seq <= prev.Snap.Seq { // refresh refused a rollback unless told to warn
		return nil, nil
	}
	k.confirmed = start
	rs, err := k.c.listRetained(ctx, newest.Seq)
	if err != nil {
		return nil, err
	}
	if prev != nil { // held as a loaded snapshot: its folder under snapshots/ reads it at once
		k.mu.Lock()
		k.clock++
		done := make(chan struct{})
		close(done)
		k.loaded[prev.Snap.Seq] = &loadedView{done: done, v: prev, used: k.clock}
		k.evict()
		k.mu.Unlock()
	}
	k.current.Store(newView(k.c, newest))
	k.roots.Store(rs)
	return prev, nil
}

// followLate is how long after current was last known the newest Follow no longer trusts
// the next number's absence alone. A root published since then would be there, or forget's
// gap mark in its place; but a mark no kept root needs is deleted once it, and its
// predecessor's end as a root, are markGrace old (forgetmarks.go), so after that long the
// next number can be absent again with newer roots above it (found by review: a mount idle
// over two daily forgets stayed on its root for good). Half markGrace leaves room for the
// storage's clock running apart from this one.
const followLate = markGrace / 2

// newer reports whether a root after seq (current's) may have been published: the next
// number is present (a root, or a gap mark: the roots are read to see). late (current last
// known the newest followLate ago or more) also asks for seq itself: forgotten (absent, or
// a gap mark), newer roots may be stored above an absent next number.
func (k *Catalog) newer(ctx context.Context, seq uint64, late bool) (bool, error) {
	_, err := k.c.be.Stat(ctx, rootsDir, rootName(seq+1))
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, storage.ErrNotFound):
		return false, fmt.Errorf("tree root %d: %w", seq+1, err)
	case !late:
		return false, nil
	}
	info, err := k.c.be.Stat(ctx, rootsDir, rootName(seq))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("tree root %d: %w", seq, err)
	}
	return info.Size == 0, nil
}

// EntryChange is an entry of a directory that differs between two views.
type EntryChange struct {
	Name string
	Gone bool // absent from the newer view
	// Meta: a directory in both views whose metadata record differs (its mode or time;
	// what it holds is compared directory by directory). Otherwise the entry was added,
	// removed, replaced by another record, or became another kind.
	Meta bool
}

// Changes lists the entries of directory dir (a plain path, "" for the root) that differ
// between old and v, in no order. It compares the two roots' lists
// only, reading nothing but long names not read yet (.veil/names).
func (v *View) Changes(ctx context.Context, old *View, dir string) ([]EntryChange, error) {
	encDir, err := v.c.keys.encPath(dir)
	if err != nil {
		return nil, err
	}
	was, is := old.dirs[encDir], v.dirs[encDir]
	var out []EntryChange
	add := func(enc string, isDir bool, ch EntryChange) error {
		if err := v.c.preloadLongName(ctx, enc); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		base := enc
		if !isDir {
			var ok bool
			if base, ok = cutSuffix(enc, keySuffix); !ok {
				return nil
			}
		}
		name, err := v.c.keys.decName(base)
		if err != nil {
			return nil // not a name of this user: never listed either
		}
		ch.Name = name
		out = append(out, ch)
		return nil
	}
	// A file's name carries keySuffix, a directory's does not: an entry that became the
	// other kind is one name gone and one added.
	for enc, isDir := range was {
		var err error
		if _, ok := is[enc]; !ok {
			err = add(enc, isDir, EntryChange{Gone: true})
		} else if old.entryHash(encDir, enc, isDir) != v.entryHash(encDir, enc, isDir) {
			err = add(enc, isDir, EntryChange{Meta: isDir})
		}
		if err != nil {
			return nil, err
		}
	}
	for enc, isDir := range is {
		if _, ok := was[enc]; !ok {
			if err := add(enc, isDir, EntryChange{}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// entryHash is the hash the root lists for entry enc of encDir: a file's record, or a
// directory's metadata record (zero without one).
func (v *View) entryHash(encDir, enc string, isDir bool) [32]byte {
	p := storage.Join(encDir, enc)
	if isDir {
		p = storage.Join(p, dirMetaName)
	}
	return v.root.Entries[p]
}
