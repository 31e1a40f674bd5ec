package dupless

import (
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// The root in the record's batch. A lone small file's chunks and record go in one atomic
// batch (putfold.go); on a service with conditional batches (storage.CreateBatcher) the
// command's next tree root goes in it too, as a create of .veil/roots/<n+1>: the record and
// the root that lists it become visible together, in one request and one commit, instead
// of a second conditional batch when the command ends (publishChanges). If another command
// published <n+1> first, the service stores nothing of the batch (409 exists); the chunks
// and record are then sent without the root and publishChanges applies this command's
// changes to the winner's root, as it always did.

// foldedRoot is the next root prepared to go with a record.
type foldedRoot struct {
	root    *treeRoot
	obj     storage.Object
	drafted bool // finished from a draft (rootdraft.go)
}

// nextRootWith returns the next root (the command's changes so far plus the record b about
// to be written at path) as a conditional batch object, or nil when it cannot go with the
// record: not tracking, Sync's removals still to come, a service without conditional
// batches, or a root too large for a batch object.
func (c *Client) nextRootWith(path string, b []byte) *foldedRoot {
	if _, ok := c.be.(storage.CreateBatcher); !ok || c.noCondBatch.Load() || c.putThen != nil {
		return nil
	}
	c.view.mu.Lock()
	base, tracking, changes := c.view.root, c.view.tracking, len(c.view.delta)
	c.view.mu.Unlock()
	if !tracking || base == nil {
		return nil
	}
	fr := &foldedRoot{}
	var sealed []byte
	if d := c.takeRootDraft(base, changes, path); d != nil {
		fr.root, sealed = c.keys.finishDraft(d, sha256.Sum256(b))
		fr.drafted = true
	} else {
		h := sha256.Sum256(b)
		c.view.mu.Lock()
		if c.view.root != nil {
			changes := maps.Clone(c.view.delta)
			if changes == nil {
				changes = map[string]*[32]byte{}
			}
			changes[path] = &h
			fr.root = nextRoot(c.view.root, changes)
		}
		c.view.mu.Unlock()
		if fr.root == nil {
			return nil
		}
		if fr.root.base != nil && fr.root.base.sum == ([32]byte{}) {
			return nil // a new base: publishChanges writes it first, then the root
		}
		sealed = c.keys.sealRoot(fr.root)
	}
	if len(sealed) > c.rootBatchMax() {
		return nil
	}
	fr.obj = storage.Object{Dir: rootsDir, Name: rootName(fr.root.Seq), Data: sealed, Create: true}
	return fr
}

// rootBatchMax is the largest sealed root that goes in a batch: on a service that takes
// one large object per batch (storage.LargeBatcher), the batch's bytes less room for a
// lone file's chunks and record beside it (a namespace of some 50,000 records); else one
// small object's (some 1,000).
func (c *Client) rootBatchMax() int {
	if _, ok := c.be.(storage.LargeBatcher); ok && !c.noLarge.Load() {
		return storage.BatchMaxBytes - 256<<10
	}
	return storage.BatchMaxObjectSize
}

// largeRefused notes a batch refused while it carried a large object (sealed, the root,
// over storage.BatchMaxObjectSize): a service older than large batch objects (413
// too_large), or one whose --max-batch-bytes is below the client's (400 limit). Either
// way the large object is what to stop sending, not conditional batches: later roots of
// this client go in batches only while small (and the caller does not blame the batch's
// conditions). ErrExists is not a refusal of the object.
func (c *Client) largeRefused(err error, sealed []byte) bool {
	if err == nil || errors.Is(err, storage.ErrExists) || len(sealed) <= storage.BatchMaxObjectSize {
		return false
	}
	c.noLarge.Store(true)
	return true
}

// nextRoot is the root after base: its entries with delta applied (a nil hash removes
// the path), numbered one higher, in the form chooseForm gives it (rootbase.go).
func nextRoot(base *treeRoot, delta map[string]*[32]byte) *treeRoot {
	next := nextEntries(base, delta)
	next.chooseForm(base, delta)
	return next
}

// nextEntries is nextRoot's root before its form is chosen.
func nextEntries(base *treeRoot, delta map[string]*[32]byte) *treeRoot {
	next := &treeRoot{Seq: base.Seq + 1, Time: time.Now().UnixNano(), Parent: base.sum, Entries: maps.Clone(base.Entries)}
	if next.Entries == nil {
		next.Entries = map[string][32]byte{}
	}
	for p, d := range delta {
		if d == nil {
			delete(next.Entries, p)
		} else {
			next.Entries[p] = *d
		}
	}
	return next
}

// putWithRoot stores objs (chunks, then the record b at path) with the next root in one
// batch when it can; published says the root went with them. When another command
// published that number first (ErrExists: nothing of the batch was stored), the batch is
// built again on the newest root; after foldTries, on any other error, or without a root to
// fold, the objects go alone and the root is left to publishChanges.
func (c *Client) putWithRoot(ctx context.Context, objs []storage.Object, path string, b []byte) (published bool, err error) {
	for try := 0; try < foldTries; try++ {
		fr := c.nextRootWith(path, b)
		if fr == nil {
			break
		}
		err = storage.PutAll(ctx, c.be, append(objs[:len(objs):len(objs)], fr.obj))
		if err == nil {
			return true, c.rootPublished(fr.root)
		}
		if errors.Is(err, storage.ErrChanged) {
			return false, err // the record's own condition (recordcas.go): writeRecordWith resolves it
		}
		if !errors.Is(err, storage.ErrExists) {
			// A service older than batch version 2 refuses the batch (nothing stored), or
			// one older than large batch objects a large root; whatever the cause, the
			// objects go alone and publishChanges decides.
			c.largeRefused(err, fr.obj.Data)
			c.log.Debug("batch with the root refused; sending it without", "err", err)
			break
		}
		c.log.Debug("another command published the next root first; building on the newest", "root", fr.obj.Name)
		refused := err
		latest, err := c.latestRoot(ctx)
		if err != nil {
			return false, err
		}
		if (latest == nil || latest.Seq+1 == fr.root.Seq) && recordCreate(objs, path) {
			// No root was published since the batch's: the name refused is the record's,
			// a create over what another command wrote (recordcas.go resolves it).
			return false, refused
		}
		if latest != nil {
			if err := c.rebaseView(ctx, latest); err != nil {
				return false, err
			}
		}
	}
	return false, storage.PutAll(ctx, c.be, objs)
}

// rebaseView makes latest, a root another command published, the base of this command's
// changes, resolved against it as publishChanges resolves them (resolveConflicts): a path
// both commands changed is listed as the record stored there now. Found by review: applied
// blindly, a folder record two puts both wrote (the later one over the other's) was listed
// as the one overwritten.
func (c *Client) rebaseView(ctx context.Context, latest *treeRoot) error {
	c.view.mu.Lock()
	orig, delta := c.view.root, maps.Clone(c.view.delta)
	c.view.mu.Unlock()
	if orig == nil {
		orig = &treeRoot{}
	}
	resolved, err := c.resolveConflicts(ctx, orig, latest, delta)
	if err != nil {
		return err
	}
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	for p, h := range resolved {
		if now, ok := c.view.delta[p]; ok && now == delta[p] && h != delta[p] {
			c.view.delta[p] = h // unless the command changed p again meanwhile
		}
	}
	c.view.root = latest
	return nil
}

// recordCreate reports whether the record at path among objs is a create.
func recordCreate(objs []storage.Object, path string) bool {
	for _, o := range objs {
		if o.Create && storage.Join(o.Dir, o.Name) == path {
			return true
		}
	}
	return false
}

// foldTries bounds the batches a record sends with a root, racing other commands.
const foldTries = 4

// rootPublished makes a root that went with the record the command's base: the changes it
// lists are published, so the command's end publishes nothing more unless it changes more.
func (c *Client) rootPublished(next *treeRoot) error {
	c.basePublished(next)
	c.view.mu.Lock()
	c.view.root, c.view.delta = next, map[string]*[32]byte{}
	c.view.mu.Unlock()
	if err := c.mem.Save(next.Seq, next.sum); err != nil {
		return errors.New("remember tree root: " + err.Error())
	}
	return nil
}
