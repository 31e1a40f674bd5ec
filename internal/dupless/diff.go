package dupless

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Diff (veil diff): what changed between two snapshots, or between a local folder and
// what is stored.

// Change is one difference. Kinds: "added" (only in the newer side, or only locally),
// "removed" (only in the older side, or only stored), "modified" (content, or for a
// local file: size, modification time or mode, put's quick check), "metadata" (same
// content; mode, modification time or link target differ), "moved" (between snapshots:
// the file or folder From is Path in the newer side, diffmove.go).
type Change struct {
	Path  string    `json:"path"`
	Kind  string    `json:"change"`
	From  string    `json:"from,omitempty"` // "moved": the path in the older side
	IsDir bool      `json:"dir,omitempty"`
	Err   string    `json:"error,omitempty"`
	saw   *[32]byte // a removed file: the record hash the diff saw (sync removes that version only)
}

// Symbol is the one-letter form of a change, as restic prints it.
func (ch Change) Symbol() string {
	switch ch.Kind {
	case "added":
		return "+"
	case "removed":
		return "-"
	case "metadata":
		return "U"
	case "moved":
		return "R"
	}
	return "M"
}

// resolve turns a point spec into a snapshot: "" or "latest" is the newest, a number is
// that snapshot, anything else a time (ParseWhen): the newest snapshot at or before it.
func resolve(spec string, snaps []Snapshot) (Snapshot, error) {
	if len(snaps) == 0 {
		return Snapshot{}, errors.New("no snapshots yet (the first put makes one)")
	}
	seq, t, err := parsePoint(spec, time.Now())
	switch {
	case err != nil:
		return Snapshot{}, err
	case seq == 0 && t.IsZero():
		return snaps[len(snaps)-1], nil
	case seq != 0:
		for _, s := range snaps {
			if s.Seq == seq {
				return s, nil
			}
		}
		return Snapshot{}, fmt.Errorf("no snapshot %d (see 'veil snapshots')", seq)
	}
	return atOrBefore(snaps, t)
}

// CheckPoint fails when spec is not a point Diff takes (a snapshot number, "latest", a
// time), so that a command line can be refused before the profile is unlocked.
func CheckPoint(spec string) error {
	_, _, err := parsePoint(spec, time.Now())
	return err
}

// parsePoint reads a point spec: "" or "latest" (both zero), a snapshot number (seq), or
// a time (ParseWhen).
func parsePoint(spec string, now time.Time) (seq uint64, t time.Time, err error) {
	if spec == "" || spec == "latest" {
		return 0, time.Time{}, nil
	}
	if n, err := strconv.ParseUint(spec, 10, 64); err == nil {
		if n == 0 {
			return 0, time.Time{}, errors.New("snapshot numbers count from 1 (see 'veil snapshots')")
		}
		return n, time.Time{}, nil
	}
	if t, err = ParseWhen(spec, now); err != nil {
		return 0, time.Time{}, fmt.Errorf("%q is neither a snapshot number nor a time: %w", spec, err)
	}
	return 0, t, nil
}

// atOrBefore is the newest of snaps (oldest first) taken at or before t.
func atOrBefore(snaps []Snapshot, t time.Time) (Snapshot, error) {
	var pick *Snapshot
	for i, s := range snaps {
		if !s.Time.After(t) {
			pick = &snaps[i]
		}
	}
	switch {
	case pick != nil:
		return *pick, nil
	case len(snaps) == 0:
		return Snapshot{}, errors.New("no snapshots yet (the first put makes one)")
	}
	return Snapshot{}, fmt.Errorf("no snapshot at or before %s (the oldest is from %s)",
		t.Format(time.RFC3339), snaps[0].Time.Format(time.RFC3339))
}

// resolveRoot is resolve, then the snapshot's root (rootOf).
func (c *Client) resolveRoot(ctx context.Context, spec string, snaps []Snapshot) (*treeRoot, error) {
	s, err := resolve(spec, snaps)
	if err != nil {
		return nil, err
	}
	return c.rootOf(ctx, s)
}

// rootOf reads the root s describes (the newest is held), checked against the
// description it was picked by (from the snapshot cache, which a swapped root of the same
// size could have misled).
func (c *Client) rootOf(ctx context.Context, s Snapshot) (*treeRoot, error) {
	c.view.mu.Lock()
	r := c.view.newest
	c.view.mu.Unlock()
	if r == nil || r.Seq != s.Seq {
		var err error
		if r, err = c.fetchRootSeq(ctx, s.Seq); err != nil {
			return nil, err
		}
	}
	if hex.EncodeToString(r.sum[:]) != s.SHA256 {
		return nil, fmt.Errorf("%w: tree root %d is not the one listed", ErrIntegrity, s.Seq)
	}
	return r, nil
}

// Diff lists what changed below path ("" for everything) from snapshot spec from to
// snapshot spec to (see resolve), sorted by path (a move by its new path). It reads the
// two roots (the others are described by the snapshot cache, snapcache.go), both records
// of a path whose record hash differs, and the records of removed and added files when
// there are both (moves, diffmove.go).
func (c *Client) Diff(ctx context.Context, from, to, path string) ([]Change, error) {
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	snaps, err := c.snapshots(ctx)
	if err == nil {
		snaps, err = readable(snaps)
	}
	if err != nil {
		return nil, err
	}
	a, err := c.resolveRoot(ctx, from, snaps)
	if err != nil {
		return nil, err
	}
	b, err := c.resolveRoot(ctx, to, snaps)
	if err != nil {
		return nil, err
	}
	under, err := c.underPath(path)
	if err != nil {
		return nil, err
	}
	var out []Change
	var gone, made []string
	for p, ha := range a.Entries {
		if !under(p) || isDirMeta(p) {
			continue
		}
		hb, ok := b.Entries[p]
		switch {
		case !ok:
			gone = append(gone, p)
		case ha != hb:
			if ch, changed := c.compareVersions(ctx, p, ha, hb); changed {
				out = append(out, ch)
			}
		}
	}
	for p := range b.Entries {
		if _, ok := a.Entries[p]; under(p) && !ok && !isDirMeta(p) {
			made = append(made, p)
		}
	}
	da, db := dirSet(a), dirSet(b)
	goneDirs, madeDirs := map[string]bool{}, map[string]bool{}
	for d := range da {
		if !db[d] && under(d+"/") {
			goneDirs[d] = true
		}
	}
	for d := range db {
		if !da[d] && under(d+"/") {
			madeDirs[d] = true
		}
	}
	rest, err := c.moveChanges(ctx, a, b, gone, made, goneDirs, madeDirs)
	if err != nil {
		return nil, err
	}
	out = append(out, rest...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// underPath returns a test for record paths below the plain path (or equal to its file
// record).
func (c *Client) underPath(path string) (func(string) bool, error) {
	path = cleanPath(path)
	if path == "" {
		return func(string) bool { return true }, nil
	}
	encDir, encName, err := c.encFile(path)
	if err != nil {
		return nil, err
	}
	file, dir := storage.Join(encDir, encName+keySuffix), storage.Join(encDir, encName)+"/"
	return func(p string) bool { return p == file || strings.HasPrefix(p, dir) }, nil
}

// dirSet lists the encrypted directories a root implies (not the root itself).
func dirSet(r *treeRoot) map[string]bool {
	out := map[string]bool{}
	for p := range r.Entries {
		for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
			if out[p[:i]] {
				break
			}
			out[p[:i]] = true
		}
	}
	return out
}

// compareVersions classifies two records of one path; changed is false when only the
// sealing differs (same content and metadata).
func (c *Client) compareVersions(ctx context.Context, path string, ha, hb [32]byte) (Change, bool) {
	ch := Change{Path: c.describe(path), Kind: "modified"}
	cur, err := c.currentObject(ctx, path)
	if err != nil {
		ch.Err = err.Error()
		return ch, true
	}
	ra, err := c.versionRecord(ctx, path, ha, cur)
	if err != nil {
		ch.Err = err.Error()
		return ch, true
	}
	rb, err := c.versionRecord(ctx, path, hb, cur)
	if err != nil {
		ch.Err = err.Error()
		return ch, true
	}
	if !sameContent(ra, rb) {
		return ch, true
	}
	if ra.Mode != rb.Mode || ra.MTime != rb.MTime || ra.Target != rb.Target {
		ch.Kind = "metadata"
		return ch, true
	}
	return ch, false
}

func sameContent(a, b *record) bool {
	if a.Type != b.Type || a.Size != b.Size || a.Target != b.Target || a.Rdev != b.Rdev || len(a.Chunks) != len(b.Chunks) {
		return false
	}
	for i := range a.Chunks {
		if !bytes.Equal(a.Chunks[i].Digest[:], b.Chunks[i].Digest[:]) || a.Chunks[i].PlainLen != b.Chunks[i].PlainLen {
			return false
		}
	}
	return true
}

// plainDir decrypts an encrypted directory path for messages.
func (c *Client) plainDir(encDir string) string {
	if p, err := c.keys.decPath(encDir); err == nil {
		return p
	}
	return encDir
}
