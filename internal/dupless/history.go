package dupless

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// History (docs/design.md, "History"; docs/formats/key-record.md, "Kept versions"): every
// tree root is a snapshot. A changing command that replaces or deletes a record some root
// lists first keeps that record object, byte for byte, as .veil/versions/<hh>/<sha256>, so
// every retained root can still be read: a record is taken from its path when the object
// there is the one the root lists, else from its kept copy (checked against the root's
// hash and opened with the path as associated data, as always).

const versionsDir = ".veil/versions"

func versionLocation(h [32]byte) (dir, name string) {
	x := hex.EncodeToString(h[:])
	return versionsDir + "/" + x[:2], x
}

// rootHash returns the hash the view's root lists for path, unless this command changed
// path already (then the root's entry is no longer what is there).
func (c *Client) rootHash(path string) (h [32]byte, listed bool) {
	if strings.HasPrefix(path, veilDir+"/") {
		return h, false
	}
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	if _, changed := c.view.delta[path]; changed || c.view.root == nil {
		return h, false
	}
	h, listed = c.view.root.Entries[path]
	return h, listed
}

// cacheRecord remembers, while a command tracks changes, the bytes of a record it read
// that the root lists, so replacing it later keeps the old version without a read.
func (c *Client) cacheRecord(path string, b []byte) {
	h, listed := c.rootHash(path)
	if !listed || sha256.Sum256(b) != h {
		return
	}
	c.view.mu.Lock()
	if c.view.tracking {
		if c.view.read == nil {
			c.view.read = map[string][]byte{}
		}
		c.view.read[path] = b
	}
	c.view.mu.Unlock()
}

// keepBeforeWrite keeps the record the root lists at path before the command replaces it:
// the bytes (read earlier, or now) are written to their kept name first, so a crash between
// the two writes loses nothing.
func (c *Client) keepBeforeWrite(ctx context.Context, path string) error {
	h, listed := c.rootHash(path)
	if !listed {
		return nil
	}
	c.view.mu.Lock()
	b := c.view.read[path]
	delete(c.view.read, path)
	c.view.mu.Unlock()
	if b == nil {
		dir, name := storage.Split(path)
		var err error
		b, err = c.getObject(ctx, dir, name)
		if errors.Is(err, storage.ErrNotFound) {
			return nil // nothing there to keep (the service lost it, or a command moved it)
		}
		if err != nil {
			return fmt.Errorf("keep the previous version of %s: %w", c.describe(path), err)
		}
	}
	if sha256.Sum256(b) != h {
		return nil // not the version the root lists (an unfinished command's): nothing to keep
	}
	dir, name := versionLocation(h)
	if err := retry(ctx, func() error { return c.be.Put(ctx, dir, name, bytesReader(b), int64(len(b))) }); err != nil {
		return fmt.Errorf("keep the previous version of %s: %w", c.describe(path), err)
	}
	return nil
}

// removeRecord deletes the record at dir/name; if the root lists it, the object is moved
// to its kept name instead, only while its bytes are the version the root lists: an object
// that is not (damaged, or an unfinished command's record) is deleted, as its bytes are no
// version any snapshot lists. Found by review: rm of a damaged file moved it to the kept
// name, and stats and prune stopped for good on a kept version that does not match its
// name (TestRemoveDamagedRecordKeepsNothing). damaged: the object deleted did not open
// under this key (the version the root lists is then not kept, unless it was before).
//
// On a service with conditional moves the service checks the bytes: one request, as a
// move alone (TestRemoveTreeOneRequestPerFile). Otherwise the bytes are read first (read
// earlier by the command, or now: one more request), and so they are when the service
// finds the object is not the version (moveKept).
//
// On a service with conditional moves, every delete here is of the bytes the command
// found there (dropAside): an object written meanwhile by another command (this one's lock
// lost while it stalled) stays, as the later write (errWrittenMeanwhile; publish lists it
// when that command's root does).
func (c *Client) removeRecord(ctx context.Context, dir, name string) (damaged bool, err error) {
	damaged, err = c.removeRecordOnce(ctx, dir, name)
	if errors.Is(err, errWrittenMeanwhile) {
		c.log.Debug("another command wrote this record meanwhile; left to it", "path", storage.Join(dir, name))
		return false, nil
	}
	return damaged, err
}

func (c *Client) removeRecordOnce(ctx context.Context, dir, name string) (damaged bool, err error) {
	path := storage.Join(dir, name)
	h, listed := c.rootHash(path)
	if !listed {
		return false, c.be.Delete(ctx, dir, name)
	}
	c.view.mu.Lock()
	b := c.view.read[path]
	delete(c.view.read, path)
	c.view.mu.Unlock()
	if b == nil || sha256.Sum256(b) == h {
		err := c.moveKept(ctx, dir, name, h, b != nil)
		if !errors.Is(err, errUnchecked) && !errors.Is(err, storage.ErrChanged) {
			return false, err
		}
		b = nil // the bytes there are to be read (no conditional moves), or changed since read
	}
	if b == nil {
		if b, err = c.getObject(ctx, dir, name); err != nil {
			return false, err
		}
	}
	got := sha256.Sum256(b)
	if got == h {
		return false, c.moveKept(ctx, dir, name, h, true)
	}
	if _, oerr := c.keys.openRecord(b, path); oerr != nil {
		return true, c.deleteRead(ctx, dir, name, got)
	}
	// A record that opens but is not the version the root lists: an unfinished command's,
	// or one another command wrote after this one looked (this one's lock lost while it
	// stalled), which that command's root may list. It is kept as its own version, as a
	// listed one is, so any root listing it still reads it (publish keeps that root's
	// entry: resolveConflicts). Found by the session 17 review: it was deleted, and the
	// other command's file could not be read (TestRemoveKeepsLaterWriteLocal, "the version").
	err = c.moveKept(ctx, dir, name, got, true)
	if errors.Is(err, storage.ErrChanged) {
		return false, fmt.Errorf("%s: %w", path, errWrittenMeanwhile)
	}
	return false, err
}

// errWrittenMeanwhile says the object a command was deleting changed after it looked:
// another command wrote it, and it is left to that command.
var errWrittenMeanwhile = errors.New("written by another command meanwhile")

// deleteRead deletes dir/name, whose bytes the command read and found to hash to h: on a
// service with conditional moves only while they still do (dropAside); elsewhere as it is.
func (c *Client) deleteRead(ctx context.Context, dir, name string, h [32]byte) error {
	if _, ok := c.be.(storage.MatchMover); !ok || c.noMoveMatch.Load() {
		return c.be.Delete(ctx, dir, name)
	}
	return c.dropAside(ctx, dir, name, h)
}

// errUnchecked is moveKept's answer when it moved nothing: the service has no conditional
// moves and the caller has not read the object.
var errUnchecked = errors.New("the object's bytes are unchecked")

// moveKept moves dir/name to the kept name of version h (deleting it when that is kept
// already). On a service with conditional moves the move holds only while the object is
// h (storage.ErrChanged otherwise, moving nothing); on one without, it is made only when
// read says the caller read the object and found it is h (else errUnchecked, no request).
// A service that refuses a conditional move as unknown (older than session 14) is told so
// by remote.Backend.MoveMatch (storage.ErrNoConditions): the client then moves as before,
// after reading, for the rest of its life (c.noMoveMatch).
func (c *Client) moveKept(ctx context.Context, dir, name string, h [32]byte, read bool) error {
	vd, vn := versionLocation(h)
	err := errUnchecked
	if mm, ok := c.be.(storage.MatchMover); ok && !c.noMoveMatch.Load() {
		err = mm.MoveMatch(ctx, dir, name, vd, vn, h)
		if errors.Is(err, storage.ErrNoConditions) {
			c.noMoveMatch.Store(true)
			err = errUnchecked
		}
	}
	conditional := !errors.Is(err, errUnchecked)
	if !conditional && read {
		err = c.be.Move(ctx, dir, name, vd, vn)
	}
	if !errors.Is(err, storage.ErrExists) { // else kept already (a conditional move checks its source first)
		return err
	}
	if !conditional {
		// No conditions here (S3, a local backend older than session 17, or a service
		// older than session 14): the object read is deleted as before. Commands that
		// write records on such a backend hold the lock; lock-free puts need conditional
		// batches (docs/design.md, "Conditions on a directory and on S3").
		return c.be.Delete(ctx, dir, name)
	}
	// Kept already: the record goes only while it is still version h. Found by review: it
	// was deleted without a condition, so a record another command wrote there since the
	// move looked (this command's lock lost while it stalled) was lost, though that
	// command's root listed it (TestRemoveKeptAlreadyKeepsLaterWrite).
	return c.dropAside(ctx, dir, name, h)
}

// dropAside deletes dir/name only while its content hashes to h, on a service with
// conditional moves (which has no conditional delete): a conditional move takes it aside
// to a name of its own (dropLocation), which is then deleted. Content changed meanwhile is
// errWrittenMeanwhile, moving and deleting nothing. An object left aside by a crash is in
// .veil/versions under a name no snapshot lists: prune removes it.
func (c *Client) dropAside(ctx context.Context, dir, name string, h [32]byte) error {
	dd, dn := dropLocation(h)
	err := c.be.(storage.MatchMover).MoveMatch(ctx, dir, name, dd, dn, h)
	if errors.Is(err, storage.ErrChanged) {
		return fmt.Errorf("%s: %w", storage.Join(dir, name), errWrittenMeanwhile)
	}
	if err != nil {
		return err
	}
	return c.be.Delete(ctx, dd, dn)
}

// dropLocation is a name of its own for a record of version h on its way out
// (docs/formats/key-record.md, "Kept versions"): beside h's kept copy, its name h's
// followed by "-drop-" and 8 random bytes in hex.
func dropLocation(h [32]byte) (dir, name string) {
	var r [8]byte
	rand.Read(r[:])
	vd, vn := versionLocation(h)
	return vd, vn + "-drop-" + hex.EncodeToString(r[:])
}

// getObject reads a whole record-sized object.
func (c *Client) getObject(ctx context.Context, dir, name string) ([]byte, error) {
	if w := c.ahead.take([2]string{dir, name}); w != nil {
		return w.wait(ctx)
	}
	return c.getObjectNow(ctx, dir, name)
}

// startReadAhead reads dir/name while the root is looked up: the next getObject of the
// same name takes it, once, instead of reading it again. Whatever reads it checks it as
// it checks any object (a record against the root), so reading it before the root rather
// than after changes what can be checked in nothing. c.ahead.stop ends a read nobody took
// (the command failed before it needed it).
func (c *Client) startReadAhead(ctx context.Context, dir, name string) {
	c.ahead.start(ctx, [2]string{dir, name}, func(ctx context.Context) ([]byte, error) { return c.getObjectNow(ctx, dir, name) })
}

func (c *Client) getObjectNow(ctx context.Context, dir, name string) ([]byte, error) {
	rc, err := c.be.Get(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxRecordBytes))
}

// keptRecord opens the kept copy of path's record object whose SHA-256 is h
// (storage.ErrNotFound when no copy is kept).
func (c *Client) keptRecord(ctx context.Context, h [32]byte, path string) (*record, error) {
	b, err := c.keptBytes(ctx, h)
	if err != nil {
		return nil, err
	}
	return c.keys.openRecord(b, path)
}

// keptBytes returns the kept copy of the record object whose SHA-256 is h.
func (c *Client) keptBytes(ctx context.Context, h [32]byte) ([]byte, error) {
	dir, name := versionLocation(h)
	b, err := c.getObject(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(b) != h {
		return nil, fmt.Errorf("%w: kept version %s does not match its name", ErrIntegrity, name)
	}
	return b, nil
}

// recordBytes reads the record object at encDir/objName as the view's root lists it: the
// object at its path, or, when that is gone or another one, the kept version the root names.
// Without fallback only the object at the path is read.
func (c *Client) recordBytes(ctx context.Context, encDir, objName string, fallback bool) ([]byte, error) {
	path := storage.Join(encDir, objName)
	want, listed := c.rootHash(path)
	if c.pinned() && !listed && !strings.HasPrefix(path, veilDir+"/") {
		return nil, fmt.Errorf("%s at snapshot %d: %w", c.describe(path), c.pin.Seq, storage.ErrNotFound)
	}
	b, err := c.getObject(ctx, encDir, objName)
	if fallback && listed && (errors.Is(err, storage.ErrNotFound) || err == nil && sha256.Sum256(b) != want) {
		kb, kerr := c.keptBytes(ctx, want)
		switch {
		case kerr == nil:
			return kb, nil
		case c.pinned() && errors.Is(kerr, storage.ErrNotFound):
			return nil, fmt.Errorf("%s: %w", c.describe(path), ErrVersionGone)
		}
	}
	return b, err
}

// ErrVersionGone reports a version a snapshot lists whose record is no longer stored: lost
// by the storage service, or replaced by a veil older than kept versions, which never kept
// it (check tells the two apart where the roots allow: checkhist.go).
var ErrVersionGone = errors.New("this version is not stored: the storage service lost or deleted it, " +
	"or a veil older than kept versions replaced it and never kept it")

// pinned reports whether the client reads a snapshot rather than the newest tree.
func (c *Client) pinned() bool { return c.pin != nil }

// listDir lists an encrypted directory: the storage service's listing, or the pinned
// snapshot's entries.
func (c *Client) listDir(ctx context.Context, encDir string) ([]storage.Info, error) {
	if !c.pinned() {
		return c.be.List(ctx, encDir)
	}
	kids, ok := c.pinDirs[encDir]
	if !ok {
		return nil, fmt.Errorf("%s at snapshot %d: %w", c.describeDir(encDir), c.pin.Seq, storage.ErrNotFound)
	}
	out := make([]storage.Info, 0, len(kids))
	for name, isDir := range kids {
		out = append(out, storage.Info{Dir: encDir, Name: name, IsDir: isDir})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// statEntry answers kindOf's question for the pinned snapshot, or asks the service.
func (c *Client) statEntry(ctx context.Context, dir, name string) (storage.Info, error) {
	if !c.pinned() {
		return c.be.Stat(ctx, dir, name)
	}
	if isDir, ok := c.pinDirs[dir][name]; ok {
		return storage.Info{Dir: dir, Name: name, IsDir: isDir}, nil
	}
	return storage.Info{}, fmt.Errorf("%s: %w", storage.Join(dir, name), storage.ErrNotFound)
}

func (c *Client) describeDir(encDir string) string {
	if p, err := c.keys.decPath(encDir); err == nil {
		return "/" + p
	}
	return encDir
}

// indexDirs maps every directory a root implies to its children (true: a directory).
func indexDirs(r *treeRoot) map[string]map[string]bool {
	out := map[string]map[string]bool{"": {}}
	for p := range r.Entries {
		parts := strings.Split(p, "/")
		dir := ""
		for i, part := range parts {
			last := i == len(parts)-1
			if out[dir] == nil {
				out[dir] = map[string]bool{}
			}
			if !(last && part == dirMetaName) {
				out[dir][part] = !last
			}
			dir = storage.Join(dir, part)
		}
	}
	return out
}
