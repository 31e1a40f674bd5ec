package client

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// Pair is one key-value pair to publish.
type Pair struct {
	Key   string
	Value []byte
	ACL   []string // client names allowed to see it; empty: every registered user
	// Pseudonyms are the pseudonym public keys the K-server requires (K-server access
	// control); empty: none required.
	Pseudonyms [][32]byte
}

// Check validates a pair before anything is sent.
func (p *Pair) Check() error {
	if err := wire.CheckKey(p.Key); err != nil {
		return err
	}
	return wire.CheckPair(&wire.PublishPair{Value: p.Value, ACL: p.ACL})
}

// Publish sends pairs in chunks of up to chunk pairs (<= wire.MaxChunk; 0: 4096). Each
// acknowledged chunk is durable on both servers; progress, if set, is called with the
// number of pairs acknowledged so far. It returns how many were acknowledged.
func (c *Client) Publish(ctx context.Context, pairs []Pair, chunk int, progress func(int)) (int, error) {
	if c.ownerKey == nil {
		return 0, ErrNoOwner
	}
	if chunk <= 0 || chunk > wire.MaxChunk {
		chunk = wire.MaxChunk
	}
	for i := range pairs {
		if err := pairs[i].Check(); err != nil {
			return 0, fmt.Errorf("pair %d (%.40q): %w", i+1, pairs[i].Key, err)
		}
	}
	done := 0
	for done < len(pairs) {
		end := min(done+chunk, len(pairs))
		if err := c.publishChunk(ctx, pairs[done:end]); err != nil {
			return done, err
		}
		done = end
		if progress != nil {
			progress(done)
		}
	}
	return done, nil
}

func (c *Client) publishChunk(ctx context.Context, pairs []Pair) error {
	items := make([]wire.KeyItem, len(pairs))
	msg := &wire.Publish{Pairs: make([]wire.PublishPair, len(pairs))}
	for i, p := range pairs {
		var id wire.ID
		rand.Read(id[:])
		items[i] = wire.KeyItem{ID: id, Key: p.Key, Pseudonyms: p.Pseudonyms}
		blob, err := c.sealOwner(id, p.Key)
		if err != nil {
			return err
		}
		msg.Pairs[i] = wire.PublishPair{ID: id, Value: p.Value, ACL: p.ACL, OwnerBlob: blob}
	}
	sc, err := wire.SealChunk(c.kpub, items)
	if err != nil {
		return err
	}
	msg.Enc = sc.Enc
	for i := range msg.Pairs {
		msg.Pairs[i].Sealed = sc.Items[i]
	}
	b, err := c.do(ctx, http.MethodPost, "/v1/publish", msg.Marshal())
	if err != nil {
		return err
	}
	n, err := wire.ParseCount(b)
	if err != nil {
		return err
	}
	if int(n.N) != len(pairs) {
		return fmt.Errorf("v-server acknowledged %d of %d pairs", n.N, len(pairs))
	}
	return nil
}

// Listed is one of the owner's pairs.
type Listed struct {
	ID    wire.ID
	Key   string
	Value []byte
	ACL   []string
	// Unacked: the K-server never acknowledged the pair's chunk (its relay got no answer);
	// the V-server is removing it from both servers. Always false from a V-server older
	// than List version 2, which does not say.
	Unacked bool
}

// List returns the owner's pairs with their keys recovered from the owner blobs.
func (c *Client) List(ctx context.Context) ([]Listed, error) {
	if c.ownerKey == nil {
		return nil, ErrNoOwner
	}
	b, err := c.do(ctx, http.MethodGet, "/v1/pairs?"+wire.ListQuery, nil) // an older V-server ignores the query: List version 1
	if err != nil {
		return nil, err
	}
	l, err := wire.ParseList(b)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, 0, len(l.Pairs))
	for _, p := range l.Pairs {
		k, err := c.openOwner(p.ID, p.OwnerBlob)
		if err != nil {
			return nil, err
		}
		out = append(out, Listed{ID: p.ID, Key: k, Value: p.Value, ACL: p.ACL, Unacked: p.State == wire.PairUnacked})
	}
	return out, nil
}

// Unpublish removes the owner's pairs with key (and, if value is not nil, that value).
func (c *Client) Unpublish(ctx context.Context, key string, value []byte) (int, error) {
	l, err := c.List(ctx)
	if err != nil {
		return 0, err
	}
	var ids []wire.ID
	for _, p := range l {
		if p.Key == key && (value == nil || string(p.Value) == string(value)) {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	b, err := c.do(ctx, http.MethodPost, "/v1/unpublish", (&wire.IDs{IDs: ids}).Marshal())
	if err != nil {
		return 0, err
	}
	n, err := wire.ParseCount(b)
	if err != nil {
		return 0, err
	}
	return int(n.N), nil
}

// DefaultLimit is the number of results a search asks for when the caller names none.
const DefaultLimit = 100

// SearchOptions shape a search.
type SearchOptions struct {
	Substring  bool
	Advanced   bool                 // also return the matched keys
	Limit      int                  // 1..1000 (0: DefaultLimit)
	Pseudonyms []ed25519.PrivateKey // pseudonyms to prove (K-server access control)
}

// Found is one search result.
type Found struct {
	ID    wire.ID
	Key   string // advanced only
	Value []byte
}

// SearchResult is what a search returned and what it cost on the wire.
type SearchResult struct {
	Found      []Found
	ReplyBytes int // size of the padded reply
}

// Search runs one query. A query refused as stale (the K-server restarted after it was
// sealed, or crashed just after answering a query stamped up to a second later) is
// resealed and sent once more, after staleRetryWait.
func (c *Client) Search(ctx context.Context, text string, o SearchOptions) (*SearchResult, error) {
	r, err := c.search(ctx, text, o)
	if errors.Is(err, errStale) && waitStale(ctx) {
		r, err = c.search(ctx, text, o)
	}
	return r, err
}

var errStale = fmt.Errorf("%w: query time refused: this machine's clock is more than %s ahead of the K-server's or more than its replay window (default 10 min) behind (check this machine's clock); or, for a private search, the K-server was upgraded from a veil without a replay mark less than its replay window ago (try again then)", ErrRejected, wire.MaxAhead)

// staleRetryWait is how long a client waits before resealing a query refused as stale:
// after a crash the K-server refuses stamps up to about a second past its last answer.
const staleRetryWait = 1500 * time.Millisecond

// waitStale waits staleRetryWait; false if ctx ended first.
func waitStale(ctx context.Context) bool {
	t := time.NewTimer(staleRetryWait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// NewQuery builds a fresh query (one-time key, nonce, time, proofs).
func (c *Client) NewQuery(text string, o SearchOptions) (*wire.Query, error) {
	q := &wire.Query{Mode: wire.ModeExact, Advanced: o.Advanced, Limit: uint16(o.Limit), Time: uint64(c.now().UnixMilli()), Text: text}
	if o.Limit == 0 {
		q.Limit = DefaultLimit
	}
	if o.Limit < 0 || o.Limit > wire.MaxLimit {
		return nil, fmt.Errorf("limit %d: want 1..%d", o.Limit, wire.MaxLimit)
	}
	if o.Substring {
		q.Mode = wire.ModeSubstring
	}
	rand.Read(q.OneTimeKey[:])
	rand.Read(q.Nonce[:])
	for _, p := range o.Pseudonyms {
		q.Prove(p)
	}
	return q, q.Check()
}

func (c *Client) search(ctx context.Context, text string, o SearchOptions) (*SearchResult, error) {
	q, err := c.NewQuery(text, o)
	if err != nil {
		return nil, err
	}
	sealed, err := wire.SealQuery(c.kpub, q)
	if err != nil {
		return nil, err
	}
	b, err := c.do(ctx, http.MethodPost, "/v1/search", (&wire.Search{Sealed: sealed}).Marshal())
	if err != nil {
		return nil, err
	}
	return OpenResults(q, b)
}

// OpenResults checks a reply to q: status, and every match record.
func OpenResults(q *wire.Query, b []byte) (*SearchResult, error) {
	res, err := wire.ParseResults(b)
	if err != nil {
		return nil, err
	}
	if err := statusErr(res.Status); err != nil {
		return nil, err
	}
	out := &SearchResult{ReplyBytes: len(b)}
	for _, r := range res.Results {
		k, err := wire.OpenMatch(q, r.ID, r.Match)
		if err != nil {
			return nil, fmt.Errorf("%w (pair %x)", ErrIntegrity, r.ID[:4])
		}
		out.Found = append(out.Found, Found{ID: r.ID, Key: k, Value: r.Value})
	}
	return out, nil
}

// statusErr maps the K-server's verdict on a query to an error (nil for OK).
func statusErr(st uint8) error {
	switch st {
	case wire.StatusOK:
		return nil
	case wire.StatusStale:
		return errStale
	case wire.StatusReplay:
		return fmt.Errorf("%w: replayed query", ErrRejected)
	case wire.StatusNotOpened:
		return fmt.Errorf("%w: the sealed query did not open (altered on the way, or the pinned K-server key is not the K-server's)", ErrRejected)
	}
	return fmt.Errorf("%w: status %d", ErrRejected, st)
}
