package storeserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/veil-project/veil/internal/storage"
)

// Quota reservations shared by the nodes (schema version 4, veil_reserved): a large put's
// reservation (quota.go) is also a row (owner, id, bytes, until), written under the user's
// row lock after a check that the user's usage, every live row of the user (any node's)
// and the put fit the quota; every transaction that grows a quota user's usage leaves
// room for the live rows it does not charge, and deletes those it charges. So a node no
// longer admits a put, nor a small write, that only fits without another node's
// reservation. A row outlives a node that dies holding it until until (the request
// timeout + 1 s, as a pin's lease), and is deleted by the next reservation of its user or
// by gc (collect), whichever comes first.

// reserve records a reservation of bytes for user if the quota takes it with every live
// reservation of the user, in one round trip: the user's row lock, then (a statement that
// starts once the lock is held, so its snapshot sees every reservation and charge
// committed before) the check and the insert, then COMMIT. storage.ErrQuota if it does not
// fit.
func (m *pgMeta) reserve(ctx context.Context, user string, bytes int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, pgTimeout)
	defer cancel()
	id := newBlobGen()
	var got bool
	err := m.retryWrite(ctx, func(c *pgx.Conn) error {
		got = false
		var b pgx.Batch
		b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
		b.Queue(`SELECT 1 FROM veil_users WHERE name = $1 FOR UPDATE`, user)
		b.Queue(`DELETE FROM veil_reserved WHERE owner = $1 AND until < now()`, user)
		b.Queue(`INSERT INTO veil_reserved (owner, id, bytes, until)
			SELECT $1, $2, $3, now() + $4 * INTERVAL '1 second' FROM veil_users u
			WHERE u.name = $1 AND (u.quota = 0 OR u.used + u.meta + $3 + (SELECT COALESCE(SUM(r.bytes), 0)
				FROM veil_reserved r WHERE r.owner = $1 AND r.until > now()) <= u.quota)
			RETURNING true`, user, id, bytes, int64(m.lease.Seconds())+1).QueryRow(func(r pgx.Row) error {
			err := r.Scan(&got)
			if errors.Is(err, pgx.ErrNoRows) { // it does not fit
				return nil
			}
			return err
		})
		b.Queue(sqlCommit)
		return c.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return 0, fmt.Errorf("quota reservation: %w", err)
	}
	if !got {
		return 0, fmt.Errorf("user %q would store %d more bytes: with the uploads in progress on every node: %w", user, bytes, storage.ErrQuota)
	}
	return id, nil
}

// unreserve deletes the row of a reservation no transaction charged (the put failed). A
// statement lost with the database leaves the row to its lease.
func (m *pgMeta) unreserve(user string, id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	m.pool.Exec(ctx, `DELETE FROM veil_reserved WHERE owner = $1 AND id = $2`, user, id)
}

// resvRow is a live reservation row read by a write transaction.
type resvRow struct {
	id, bytes int64
}

// reserved is the bytes of user's live reservations (any node's) that this transaction
// does not charge, read once per transaction under the user's row lock (the group holds
// it: a reservation of the user waits for it, so none is recorded meanwhile).
func (t *pgTx) reserved(user string) (int64, error) {
	rows, ok := t.resv[user]
	if !ok {
		r, err := t.q.Query(t.ctx, `SELECT id, bytes FROM veil_reserved WHERE owner = $1 AND until > now()`, user)
		if err != nil {
			return 0, err
		}
		if rows, err = pgx.CollectRows(r, func(r pgx.CollectableRow) (resvRow, error) {
			var x resvRow
			return x, r.Scan(&x.id, &x.bytes)
		}); err != nil {
			return 0, err
		}
		if t.resv == nil {
			t.resv = map[string][]resvRow{}
		}
		t.resv[user] = rows
	}
	var n int64
	for _, r := range rows {
		if !slices.Contains(t.charged[user], r.id) {
			n += r.bytes
		}
	}
	return n, nil
}

// chargeReservation says this transaction charges user's reservation id: its row is
// deleted with the transaction's writes, and reserved no longer counts it.
func (t *pgTx) chargeReservation(user string, id int64) {
	if t.charged == nil {
		t.charged = map[string][]int64{}
	}
	if !slices.Contains(t.charged[user], id) {
		t.charged[user] = append(t.charged[user], id)
	}
}

// queueCharged queues the deletes of the rows of the reservations this transaction charged.
func (t *pgTx) queueCharged(b *pgBatch) {
	users := make([]string, 0, len(t.charged))
	for u := range t.charged {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		b.queue(`DELETE FROM veil_reserved WHERE owner = $1 AND id = ANY($2)`, u, t.charged[u])
	}
}
