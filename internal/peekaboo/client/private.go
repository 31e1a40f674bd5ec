package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/veil-project/veil/internal/peekaboo/dpf"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// errBucket: the two shares do not reconstruct a valid bucket (wraps ErrIntegrity).
var errBucket = fmt.Errorf("%w: private-query bucket", ErrIntegrity)

// PIRParams asks the V-server for the private-query table's geometry (cached).
func (c *Client) PIRParams(ctx context.Context) (pir.Params, error) {
	c.pirMu.Lock()
	defer c.pirMu.Unlock()
	if c.pir.Enabled() {
		return c.pir, nil
	}
	b, err := c.do(ctx, http.MethodGet, "/v1/pir", nil)
	if err != nil {
		return pir.Params{}, err
	}
	var p pir.Params
	if err := json.Unmarshal(b, &p); err != nil {
		return pir.Params{}, fmt.Errorf("v-server: private-query parameters: %v", err)
	}
	if err := p.Check(); err != nil {
		return pir.Params{}, fmt.Errorf("v-server: %w", err)
	}
	c.pir = p
	return p, nil
}

// PrivateQuery is one private query ready to send: what goes to the V-server and what
// the client keeps to read the answer.
type PrivateQuery struct {
	Material *pir.Material
	Query    *wire.PIRQuery // the K-server's part (sealed in Request)
	Request  *wire.PIRSearch
}

// NewPrivateQuery splits the exact-match query key into two DPF keys for its bucket:
// party 0's for the V-server, party 1's sealed (HPKE) to the K-server with a one-time
// key for the answer.
func (c *Client) NewPrivateQuery(p pir.Params, key string) (*PrivateQuery, error) {
	if err := wire.CheckKey(key); err != nil {
		return nil, err
	}
	m := pir.Derive(key)
	k0, k1, err := dpf.Gen(uint64(m.Bucket(p.Bits)), p.Bits, rand.Reader)
	if err != nil {
		return nil, err
	}
	q := &wire.PIRQuery{Time: uint64(c.now().UnixMilli()), DPFKey: k1.Marshal()}
	rand.Read(q.OneTimeKey[:])
	rand.Read(q.Nonce[:])
	sealed, err := wire.SealPIRQuery(c.kpub, q)
	if err != nil {
		return nil, err
	}
	return &PrivateQuery{Material: m, Query: q, Request: &wire.PIRSearch{Key0: k0.Marshal(), Sealed: sealed}}, nil
}

// Fetch asks the V-server for the values of ids (at most wire.MaxFetch) that a private
// query found; it returns the parsed reply and its bytes.
func (c *Client) Fetch(ctx context.Context, ids []wire.ID) (*wire.Results, []byte, error) {
	if len(ids) > wire.MaxFetch {
		return nil, nil, fmt.Errorf("%d ids: at most %d per fetch", len(ids), wire.MaxFetch)
	}
	b, err := c.do(ctx, http.MethodPost, "/v1/fetch", (&wire.Fetch{IDs: ids}).Marshal())
	if err != nil {
		return nil, nil, err
	}
	res, err := wire.ParseResults(b)
	return res, b, err
}

// SendPrivate sends pq to the V-server and returns its reply, unopened (pq.Open reads it).
func (c *Client) SendPrivate(ctx context.Context, pq *PrivateQuery) ([]byte, error) {
	return c.do(ctx, http.MethodPost, "/v1/pir", pq.Request.Marshal())
}

// Open reconstructs the bucket from a PIR reply and returns the ids of the key's pairs.
func (pq *PrivateQuery) Open(p pir.Params, reply []byte) ([]wire.ID, error) {
	rep, err := wire.ParsePIRReply(reply)
	if err != nil {
		return nil, err
	}
	if err := statusErr(rep.Status); err != nil {
		return nil, err
	}
	a1, err := wire.OpenPIRAnswer(pq.Query, rep.Sealed1)
	if err != nil {
		return nil, fmt.Errorf("%w: the K-server's share does not open (altered by the V-server?)", ErrIntegrity)
	}
	ids, err := pq.Material.Find(p, rep.Share0, a1)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBucket, err)
	}
	out := make([]wire.ID, len(ids))
	for i, id := range ids {
		out[i] = wire.ID(id)
	}
	return out, nil
}

// PrivateSearch runs an exact-match query that neither server learns: a DPF key to each
// server over the replicated table, then the values of the ids found, released by the
// V-server under its ACLs (docs/design-peekaboo.md "Private queries"). Limit (0: 100)
// caps the results; substring, advanced and pseudonym options are refused.
func (c *Client) PrivateSearch(ctx context.Context, key string, o SearchOptions) (*SearchResult, error) {
	switch {
	case o.Substring:
		return nil, errors.New("private queries are exact match only (drop --substring)")
	case len(o.Pseudonyms) > 0:
		return nil, errors.New("private queries cannot prove pseudonyms: pairs restricted to pseudonyms are not in the private-query table")
	case o.Limit < 0 || o.Limit > wire.MaxLimit:
		return nil, fmt.Errorf("limit %d: want 1..%d", o.Limit, wire.MaxLimit)
	}
	// A stale query is resealed (after staleRetryWait, as Search does); a bucket that
	// fails its checks is asked again (a publication between the two servers' commits
	// makes their tables differ briefly); two retries in all.
	r, err := c.privateSearch(ctx, key, o)
	for tries := 0; tries < 2 && (errors.Is(err, errStale) || errors.Is(err, errBucket)); tries++ {
		if errors.Is(err, errStale) && !waitStale(ctx) {
			break
		}
		r, err = c.privateSearch(ctx, key, o)
	}
	return r, err
}

func (c *Client) privateSearch(ctx context.Context, key string, o SearchOptions) (*SearchResult, error) {
	p, err := c.PIRParams(ctx)
	if err != nil {
		return nil, err
	}
	pq, err := c.NewPrivateQuery(p, key)
	if err != nil {
		return nil, err
	}
	b, err := c.SendPrivate(ctx, pq)
	if err != nil {
		return nil, err
	}
	ids, err := pq.Open(p, b)
	if err != nil {
		return nil, err
	}
	// Always fetch (also with no id), so the V-server's traffic does not show a miss.
	res, vb, err := c.Fetch(ctx, ids)
	if err != nil {
		return nil, err
	}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	out := &SearchResult{ReplyBytes: len(b) + len(vb)}
	for _, r := range res.Results {
		if !slices.Contains(ids, r.ID) {
			return nil, fmt.Errorf("%w (pair %x was not asked for)", ErrIntegrity, r.ID[:4])
		}
		if len(out.Found) < limit {
			out.Found = append(out.Found, Found{ID: r.ID, Key: key, Value: r.Value})
		}
	}
	return out, nil
}
