package dupless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Snapshots are the retained tree roots (docs/design.md, "History"): every command that
// changes the namespace publishes one, and each stays until 'veil forget' drops it.

// Snapshot describes one tree root: the namespace as one command left it.
type Snapshot struct {
	Seq     uint64    `json:"snapshot"`
	Time    time.Time `json:"time"`
	Files   int       `json:"files"`   // file and symlink records
	Records int       `json:"records"` // every record (directories too)
	SHA256  string    `json:"sha256"`
	// Damaged is set, with Seq only, for a retained snapshot older than the newest whose
	// root or tree base cannot be read ('veil forget --drop-damaged' drops it): Snapshots
	// lists it, the commands that pick a snapshot by time refuse to guess around it.
	Damaged string `json:"damaged,omitempty"`
}

func snapshotOf(r *treeRoot) Snapshot {
	s := Snapshot{Seq: r.Seq, Time: time.Unix(0, r.Time), Records: len(r.Entries), SHA256: hex.EncodeToString(r.sum[:])}
	for p := range r.Entries {
		if strings.HasSuffix(p, keySuffix) {
			s.Files++
		}
	}
	return s
}

// loadRoots reads and authenticates every root stored, oldest first. The newest root
// refresh already read is not read again, nor are the numbers listed empty (forget's gap
// marks: one GET each for nothing, and forget leaves one per dropped root for a day). A
// damaged older root is an error naming every damaged one (rootsdamaged.go).
func (c *Client) loadRoots(ctx context.Context) ([]*treeRoot, error) {
	roots, damaged, err := c.loadRootsDamaged(ctx)
	if err == nil && len(damaged) > 0 {
		err = errDamagedSnapshots(damaged)
	}
	if err != nil {
		return nil, err
	}
	return roots, nil
}

// Snapshots lists the retained snapshots, oldest first.
func (c *Client) Snapshots(ctx context.Context) ([]Snapshot, error) {
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	return c.snapshots(ctx)
}

// readable is snaps when none is damaged, else the error naming the damaged ones (a pick
// by time cannot know where a damaged snapshot's time falls).
func readable(snaps []Snapshot) ([]Snapshot, error) {
	var d []DamagedSnapshot
	for _, s := range snaps {
		if s.Damaged != "" {
			d = append(d, DamagedSnapshot{Seq: s.Seq, Err: s.Damaged})
		}
	}
	if d != nil {
		return nil, errDamagedSnapshots(d)
	}
	return snaps, nil
}

// snapshots is Snapshots after refresh.
func (c *Client) snapshots(ctx context.Context) ([]Snapshot, error) {
	written, sizes, err := c.rootSizes(ctx)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for s := range written {
		if sizes[s] > 0 { // not a gap mark
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	c.view.mu.Lock()
	newest := c.view.newest
	c.view.mu.Unlock()
	return c.describeRoots(ctx, seqs, sizes, written, 8, func(s uint64) (*treeRoot, bool) { return newest, newest != nil && newest.Seq == s })
}

// PinSnapshot makes every later read of this client (Get, List, Log...) see snapshot seq;
// the client then refuses to change anything.
func (c *Client) PinSnapshot(ctx context.Context, seq uint64) (Snapshot, error) {
	if err := c.refresh(ctx); err != nil {
		return Snapshot{}, err
	}
	return c.pinSeq(ctx, seq)
}

// pinSeq is PinSnapshot after refresh.
func (c *Client) pinSeq(ctx context.Context, seq uint64) (Snapshot, error) {
	r, err := c.fetchRootSeq(ctx, seq)
	if errors.Is(err, storage.ErrNotFound) {
		return Snapshot{}, fmt.Errorf("no snapshot %d (see 'veil snapshots')", seq)
	}
	if err != nil {
		return Snapshot{}, err
	}
	c.pinTo(r)
	return snapshotOf(r), nil
}

// PinTime pins the client to the newest snapshot taken at or before t.
func (c *Client) PinTime(ctx context.Context, t time.Time) (Snapshot, error) {
	if err := c.refresh(ctx); err != nil {
		return Snapshot{}, err
	}
	snaps, err := c.snapshots(ctx) // described, mostly from the snapshot cache: one root read below
	if err == nil {
		snaps, err = readable(snaps)
	}
	if err != nil {
		return Snapshot{}, err
	}
	pick, err := atOrBefore(snaps, t)
	if err != nil {
		return Snapshot{}, err
	}
	r, err := c.rootOf(ctx, pick)
	if err != nil {
		return Snapshot{}, err
	}
	c.pinTo(r)
	return snapshotOf(r), nil
}

// PinVersion pins the client to the snapshot where version n of path (as Log numbers
// them) first appeared.
func (c *Client) PinVersion(ctx context.Context, path string, n int) (Snapshot, error) {
	vs, err := c.Log(ctx, path)
	if err != nil {
		return Snapshot{}, err
	}
	for _, v := range vs {
		if v.N == n {
			return c.pinSeq(ctx, v.Seq) // Log refreshed
		}
	}
	return Snapshot{}, fmt.Errorf("%s has no version %d (it has %d; see 'veil log %s')", displayPath(path), n, countVersions(vs), displayPath(path))
}

func (c *Client) pinTo(r *treeRoot) {
	c.pin, c.pinDirs = r, indexDirs(r)
	c.view.mu.Lock()
	c.view.root = r
	c.view.mu.Unlock()
}

func countVersions(vs []Version) int {
	n := 0
	for _, v := range vs {
		if v.N > n {
			n = v.N
		}
	}
	return n
}

func displayPath(p string) string {
	if p = cleanPath(p); p == "" {
		return "/"
	}
	return p
}

// recordIn reads the record object whose SHA-256 is h, stored at path when a root lists
// it: from path if it is still that object, else its kept version.
func (c *Client) recordIn(ctx context.Context, path string, h [32]byte) (*record, error) {
	cur, err := c.currentObject(ctx, path)
	if err != nil {
		return nil, err
	}
	return c.versionRecord(ctx, path, h, cur)
}

// currentObject reads the record object now at path (nil if there is none).
func (c *Client) currentObject(ctx context.Context, path string) ([]byte, error) {
	dir, name := storage.Split(path)
	b, err := c.getObject(ctx, dir, name)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// versionRecord is recordIn with the object now at path already read (cur, as
// currentObject returns it): a command that opens several versions of one path reads it
// once.
func (c *Client) versionRecord(ctx context.Context, path string, h [32]byte, cur []byte) (*record, error) {
	b := cur
	if b == nil || sha256.Sum256(b) != h {
		var err error
		if b, err = c.keptBytes(ctx, h); errors.Is(err, storage.ErrNotFound) {
			return nil, ErrVersionGone
		} else if err != nil {
			return nil, err
		}
	}
	return c.keys.openRecord(b, path)
}

// loadEach loads the roots numbered seqs (load), up to par at once, as T, in order; known
// gives one without loading. A root a forget dropped meanwhile (storage.ErrNotFound) is
// left out; any other error is the answer.
func loadEach[T any](ctx context.Context, seqs []uint64, par int, known func(uint64) (T, bool),
	load func(context.Context, uint64) (T, error)) ([]T, error) {
	vals := make([]T, len(seqs))
	errs := make([]error, len(seqs))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, s := range seqs {
		if v, ok := known(s); ok {
			vals[i] = v
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			vals[i], errs[i] = load(ctx, s)
		}()
	}
	wg.Wait()
	out := make([]T, 0, len(vals))
	for i, v := range vals {
		if errors.Is(errs[i], storage.ErrNotFound) {
			continue // dropped by a forget meanwhile
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, v)
	}
	return out, nil
}
