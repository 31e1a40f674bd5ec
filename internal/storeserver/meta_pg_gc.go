package storeserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// collect removes garbage without stopping uploads on any node:
//  1. inline content without references: deleted with its row in one statement (a
//     concurrent reference waits for the row lock and then records the content again);
//  2. blob-store content without references and without a live pin: marked deleting with
//     a claim (pinned_until) that keeps other gcs off it (a pin or a reference on a
//     deleting row is refused), removed from the blob store, then its row is deleted; a
//     deleting row whose claim ran out is a crashed gc's, taken over;
//  3. content in the blob store without a row (an upload that crashed before its pin
//     commit, or a store migrated from elsewhere): claimed by inserting a deleting row,
//     so an upload arriving meanwhile waits, then removed with its claim.
//
// First it deletes the quota reservations whose lease ran out (a node that died holding
// them): nothing counts them (every read asks until > now()), and a user's next
// reservation deletes only that user's, so those of a user who never reserves again, or
// was removed, stayed.
func (m *pgMeta) collect(ctx context.Context, blobs blobStore) (GCReport, error) {
	var rep GCReport
	if _, err := m.pool.Exec(ctx, `DELETE FROM veil_reserved WHERE until < now()`); err != nil {
		return rep, pgFault(err)
	}
	rows, err := m.pool.Query(ctx, `DELETE FROM veil_blobs WHERE refs = 0 AND data IS NOT NULL RETURNING size`)
	sizes, err := collectInt64(rows, err)
	if err != nil {
		return rep, pgFault(err)
	}
	for _, n := range sizes {
		rep.Blobs++
		rep.Bytes += n
	}
	// A row marked deleting is another gc's until its claim (pinned_until, set with the
	// mark) runs out: only then is it a crashed gc's, to finish. Found by review: taking
	// it at once, a second gc removed the blob and its row, an upload recorded the same
	// content anew, and the first gc's late remove deleted the new upload's blob.
	rows, err = m.pool.Query(ctx, `UPDATE veil_blobs SET deleting = TRUE, pinned_until = now() + $1 * INTERVAL '1 second'
		WHERE data IS NULL AND refs = 0 AND (CASE WHEN deleting THEN pinned_until IS NULL OR pinned_until < now()
			ELSE pins = 0 OR pinned_until < now() END)
		RETURNING hash, size, gen, keyed`, m.gcClaim())
	dead, err := collectRows(rows, err)
	if err != nil {
		return rep, pgFault(err)
	}
	for _, d := range dead {
		if err := m.removeRow(ctx, blobs, d); err != nil {
			return rep, err
		}
		rep.Blobs++
		rep.Bytes += d.size
	}
	rows, err = m.pool.Query(ctx, `SELECT hash, size, gen, keyed FROM veil_blobs`)
	all, err := collectRows(rows, err)
	if err != nil {
		return rep, pgFault(err)
	}
	hashes := make(map[[32]byte]bool, len(all)) // a row of any kind keeps a copy of key 0
	keyed := make(map[blobID]bool, len(all))
	for _, b := range all {
		hashes[b.h] = true
		keyed[b.id()] = b.keyed
	}
	orphans, err := orphanBlobs(ctx, blobs, func(b blobID) bool { return b.key == 0 && hashes[b.h] || keyed[b] })
	if err != nil {
		return rep, err
	}
	n, err := m.removeKeyedOrphans(ctx, blobs, orphans)
	rep.OrphanBlobs += n
	if err != nil {
		return rep, err
	}
	for _, b := range orphans {
		if b.key != 0 {
			continue
		}
		tag, err := m.pool.Exec(ctx, `INSERT INTO veil_blobs (hash, size, refs, deleting, pinned_until)
			VALUES ($1, 0, 0, TRUE, now() + $2 * INTERVAL '1 second')
			ON CONFLICT (hash) DO NOTHING`, b.h[:], m.gcClaim())
		if err != nil {
			return rep, pgFault(err)
		}
		if tag.RowsAffected() == 0 {
			continue // recorded meanwhile: an upload owns it
		}
		if err := m.removeRow(ctx, blobs, blobRow{h: b.h}); err != nil {
			return rep, err
		}
		rep.OrphanBlobs++
	}
	return rep, nil
}

// removeRow removes the copy of a row marked deleting (or a claim on an orphan copy) from
// the blob store, then the row, if it is still the row of that generation: a removal whose
// claim ran out (another gc took it over and finished) must not delete a later claim's row.
// The copy removed is named by the row's key, so a late removal cannot delete the copy of
// a row recorded anew meanwhile (keyed: the new row's copy has another name).
func (m *pgMeta) removeRow(ctx context.Context, blobs blobStore, d blobRow) error {
	if err := blobs.remove(ctx, d.id()); err != nil {
		return fmt.Errorf("remove %x: %w", d.h[:8], err) // the row's claim runs out: gc finishes
	}
	if _, err := m.pool.Exec(ctx, `DELETE FROM veil_blobs WHERE hash = $1 AND deleting AND gen = $2`, d.h[:], d.gen); err != nil {
		return pgFault(err)
	}
	return nil
}

// removeKeyedOrphans removes the orphans among copies named by a generation (key not 0)
// whose row is gone: read again after the listing, since an upload records its row before
// it stores its copy, so a row recorded after collect's read and before the listing is
// found here. A row gone is gone for good (a row recorded anew has another generation),
// so its copy is removed without a claim: nothing can come to need it.
func (m *pgMeta) removeKeyedOrphans(ctx context.Context, blobs blobStore, orphans []blobID) (int64, error) {
	var hs [][]byte
	var keys []int64
	for _, b := range orphans {
		if b.key != 0 {
			hs, keys = append(hs, b.h[:]), append(keys, b.key)
		}
	}
	if len(hs) == 0 {
		return 0, nil
	}
	rows, err := m.pool.Query(ctx, `SELECT hash, size, gen, keyed FROM veil_blobs
		WHERE keyed AND (hash, gen) IN (SELECT * FROM unnest($1::bytea[], $2::bigint[]))`, hs, keys)
	live, err := collectRows(rows, err)
	if err != nil {
		return 0, pgFault(err)
	}
	recorded := make(map[blobID]bool, len(live))
	for _, b := range live {
		recorded[b.id()] = true
	}
	var n int64
	for _, b := range orphans {
		if b.key == 0 || recorded[b] {
			continue
		}
		if err := blobs.remove(ctx, b); err != nil {
			return n, fmt.Errorf("remove orphan %x: %w", b.h[:8], err)
		}
		n++
	}
	return n, nil
}

// gcClaim is how long, in seconds, a gc's mark on a blob keeps other gcs off it: the
// request timeout (m.lease), which bounds one blob's removal as it bounds an upload.
func (m *pgMeta) gcClaim() int64 { return int64(m.lease/time.Second) + 1 }

// blobRow is what gc reads of a blob row.
type blobRow struct {
	h     [32]byte
	size  int64
	gen   int64
	keyed bool
}

// id names the row's copy in the blob store.
func (b blobRow) id() blobID { return blobID{b.h, rowKey(b.gen, b.keyed)} }

func collectRows(rows pgx.Rows, err error) ([]blobRow, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (blobRow, error) {
		var x blobRow
		var h []byte
		err := r.Scan(&h, &x.size, &x.gen, &x.keyed)
		if err == nil && len(h) != 32 {
			err = fmt.Errorf("%w: blob key of %d bytes", errRecord, len(h))
		}
		copy(x.h[:], h)
		return x, err
	})
}

func collectInt64(rows pgx.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// discard ends an upload's pin and, when it was the row's only pin and the row has no
// reference, marks the row deleting in the same statement, as collect marks it: holds of
// the content wait (hold), another node's gc keeps off it until the claim runs out, a
// reference is refused. Then it removes the blob and the row, as collect does. One
// statement, so of two refused uploads of the same content the second to end sees the
// first's pin gone. A transaction that did reference the blob (an outcome unknown to the
// caller) holds the row lock until it commits, and the statement then sees its reference.
func (m *pgMeta) discard(ctx context.Context, h [32]byte, pin blobPin, blobs blobStore) error {
	var gone bool
	err := m.pool.QueryRow(ctx, `UPDATE veil_blobs SET pins = pins - 1,
			deleting = (pins = 1 AND refs = 0 AND data IS NULL),
			pinned_until = CASE WHEN pins = 1 AND refs = 0 AND data IS NULL
				THEN now() + $3 * INTERVAL '1 second' ELSE pinned_until END
		WHERE hash = $1 AND gen = $2 AND pins > 0 AND NOT deleting
		RETURNING deleting`, h[:], pin.gen, m.gcClaim()).Scan(&gone)
	switch {
	case errors.Is(err, pgx.ErrNoRows): // marked by gc (the pin's lease ran out) or gone
		return nil
	case err != nil:
		// The pin is not released again: the statement may have run and dropped it, its
		// answer lost (pgx reports a read on the connection it closed as "conn closed",
		// safe to retry), and a second drop would take another upload's pin, so gc could
		// collect the content under that upload, whose transaction then fails
		// (TestPGDiscardAnswerLostKeepsOtherPin). A pin kept so is left to its lease, as
		// a dead node's is; so is the mark, if the statement made one.
		return pgFault(err)
	case !gone: // referenced, or held by another upload
		return nil
	}
	return m.removeRow(ctx, blobs, blobRow{h: h, gen: pin.gen, keyed: pin.key != 0})
}
