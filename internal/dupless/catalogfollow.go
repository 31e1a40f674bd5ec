package dupless

import (
	"context"
	"errors"
	"fmt"

	"github.com/veil-project/veil/internal/storage"
)

// Following the newest root (veil mount's current/). A mount runs for days while other
// commands, on this device or others, publish roots; Follow lets it show them. Asking
// costs one request: the root after current's number is absent until a command publishes
// it (forget never drops the newest root, rootprobe.go), so a STAT answered "not found"
// says nothing changed. Only when it is present does Follow read the newest root as every
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
	if prev != nil {
		_, err := k.c.be.Stat(ctx, rootsDir, rootName(prev.Snap.Seq+1))
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("tree root %d: %w", prev.Snap.Seq+1, err)
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
