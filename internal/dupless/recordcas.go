package dupless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// Record writes as compare-and-swaps (docs/design.md, "Two puts of one file"). Puts share
// the lock, and a lock-free put takes none, so two commands may write the record of one
// path at once. Before session 12 the later write simply replaced the earlier one: the
// command that wrote first could publish a root listing its record after the other had
// replaced it (and no copy of it was kept), so that snapshot could not restore the file,
// and if the other command never published, the first one's acknowledged file was lost
// (found by a review and by a user walkthrough: two puts of one folder). On a storage
// service with match conditions (storage.MatchBatcher, batch version 4) a record is now
// written only over what the command believes is stored there: the record it wrote
// itself, else the one its root lists, else nothing. When another command wrote the path
// in between, the write is refused (ErrChanged, or ErrExists for a name it believed free);
// the command then keeps the other's record as a version (by its hash, where history
// reads versions: a root of the other command may list it) and writes again over it. So
// every record any root lists stays readable, and the later write is what is stored.

// recordTries bounds the writes of one record that lose to other commands' writes.
const recordTries = 5

// recordCond is the condition a record write at path carries: the record this command
// believes is stored there (Match), or none at all (Create); no condition on a backend
// without match conditions, for veil's own objects, or before the command tracks changes.
func (c *Client) recordCond(path string) (match *[32]byte, create bool) {
	if c.noMatch.Load() || strings.HasPrefix(path, veilDir+"/") {
		return nil, false
	}
	if _, ok := c.be.(storage.MatchBatcher); !ok || c.batch == nil || c.batch.disabled() {
		return nil, false // no batch carries a condition (a service without the batch route)
	}
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	if !c.view.tracking {
		return nil, false
	}
	if h, ok := c.view.expect[path]; ok {
		return h, h == nil
	}
	if h, ok := c.view.delta[path]; ok {
		return h, h == nil
	}
	if c.view.root == nil {
		return nil, false
	}
	if h, listed := c.view.root.Entries[path]; listed {
		return &h, false
	}
	return nil, true
}

// conditioned returns obj (a record at path) with the condition recordCond gives.
func (c *Client) conditioned(obj storage.Object, path string) storage.Object {
	obj.Match, obj.Create = c.recordCond(path)
	return obj
}

// lostRecordRace reports whether err is a conditional record write refused because
// another command wrote the path first.
func lostRecordRace(err error, obj storage.Object) bool {
	return obj.Match != nil && errors.Is(err, storage.ErrChanged) || obj.Create && errors.Is(err, storage.ErrExists)
}

// keepOthers keeps what another command stored at path (dir/name) as a version, so that a
// root listing it can still read it once this command writes over it, and makes it what
// this command's next write of path expects; it returns nil: write again. mine is the
// record this command is writing: stored already (an earlier try of this write was cut
// off after the service committed it), it is neither kept nor written again (returned).
// With adopt (the record this command is writing, when it takes another's in its place),
// another command's record of the same type (a folder's, for a folder this command gives
// one: writeFolderRecord) is returned instead: the command takes it as its own. Found in
// session 17: a mkdir of a folder that a put stored meanwhile wrote its record (0755,
// dated the mkdir) over the put's, as TestMkdirKeepsAFoldersRecord forbids when the put
// came first (docs/security.md: what a service refusing falsely can do with this).
func (c *Client) keepOthers(ctx context.Context, path string, mine []byte, adopt *record) ([]byte, error) {
	dir, name := storage.Split(path)
	b, err := c.getObjectNow(ctx, dir, name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		c.setExpect(path, nil)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read what another command wrote at %s: %w", c.describe(path), err)
	case bytes.Equal(b, mine):
		return mine, nil // sealed with a random nonce: equal bytes are this very write
	}
	h := sha256.Sum256(b)
	theirs, oerr := c.keys.openRecord(b, path)
	if oerr != nil {
		// Damaged: no root lists it (a root lists records that opened), so nothing is
		// kept; written over as a record the root lists is (TestPutAndMoveOverDamagedRecord).
		c.setExpect(path, &h)
		return nil, nil
	}
	if adopt != nil && adopt.Type == theirs.Type {
		c.log.Debug("another command recorded this meanwhile; taking its record", "path", path)
		return b, nil
	}
	vd, vn := versionLocation(h)
	if err := retry(ctx, func() error { return c.be.Put(ctx, vd, vn, bytesReader(b), int64(len(b))) }); err != nil {
		return nil, fmt.Errorf("keep the version another command wrote at %s: %w", c.describe(path), err)
	}
	c.log.Debug("another command wrote this record meanwhile; kept its version, writing over it", "path", path)
	c.setExpect(path, &h)
	return nil, nil
}

// setExpect makes h what the next write of path expects to find (nil: nothing).
func (c *Client) setExpect(path string, h *[32]byte) {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	if c.view.expect == nil {
		c.view.expect = map[string]*[32]byte{}
	}
	c.view.expect[path] = h
}

// forgetExpect drops what setExpect set for path: the command's own write is there now.
func (c *Client) forgetExpect(path string) {
	c.view.mu.Lock()
	delete(c.view.expect, path)
	c.view.mu.Unlock()
}

// conditional reports whether o carries a condition on what is stored under its name.
func conditional(o storage.Object) bool { return o.Match != nil || o.Create }

// errNoBatchRoute is the answer to a conditional object on a service without the batch
// route (an older veil): no batch carries its condition; writeRecordWith then writes it
// without one (noMatchService).
func errNoBatchRoute(o storage.Object) error {
	return fmt.Errorf("%s: the service takes no batches: %w", storage.Join(o.Dir, o.Name), storage.ErrNoConditions)
}

// noMatchService notes a service that refused a match condition as unknown (older than
// batch version 4): records are written unconditionally for the rest of the command.
func (c *Client) noMatchService(err error, obj storage.Object) bool {
	if !conditional(obj) || lostRecordRace(err, obj) || !unsupportedBatch(err) {
		return false
	}
	c.noMatch.Store(true)
	c.log.Debug("the storage service takes no match conditions (older than batch version 4); records written unconditionally", "err", err)
	return true
}

// unsupportedBatch reports whether err is a service refusing a batch's version (a service
// older than the conditions the batch carries), not a failure of the batch itself.
func unsupportedBatch(err error) bool {
	return errors.Is(err, storage.ErrNoConditions) // the remote backend's answer for an older service
}
