package client

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// K-server access control: an owner derives one Ed25519 pseudonym per client it
// authorises (from its owner key, so it keeps no state), grants it to the client sealed to
// the client's HPKE key through the V-server, and lists the pseudonym public keys a pair
// requires when publishing. A client proves its pseudonyms in its sealed queries.

// ErrNoClientKey: the credential predates pseudonyms; join again.
var ErrNoClientKey = errors.New("credential has no client key (run veil peekaboo join again)")

// PseudonymFor is the pseudonym this owner assigns to client.
func (c *Client) PseudonymFor(client string) (ed25519.PrivateKey, error) {
	if c.ownerKey == nil {
		return nil, ErrNoOwner
	}
	m := hmac.New(sha256.New, c.ownerKey)
	m.Write([]byte("veil peekaboo v1 pseudonym seed\x00" + client))
	return ed25519.NewKeyFromSeed(m.Sum(nil)), nil
}

// PseudonymPub is the public key of PseudonymFor(client), for Pair.Pseudonyms.
func (c *Client) PseudonymPub(client string) ([32]byte, error) {
	var p [32]byte
	k, err := c.PseudonymFor(client)
	if err == nil {
		copy(p[:], k.Public().(ed25519.PublicKey))
	}
	return p, err
}

// RegisterClientKey uploads the client's HPKE public key so owners can grant it pseudonyms.
func (c *Client) RegisterClientKey(ctx context.Context) error {
	k, err := c.cred.ClientKeyPair()
	if err != nil {
		return err
	}
	if k == nil {
		return ErrNoClientKey
	}
	_, err = c.do(ctx, http.MethodPut, "/v1/clientkey", k.Public().Marshal())
	return err
}

// Grant gives client this owner's pseudonym for it (idempotent).
func (c *Client) Grant(ctx context.Context, client string) error {
	if err := wire.CheckName(client); err != nil {
		return err
	}
	b, err := c.do(ctx, http.MethodGet, "/v1/clientkey/"+url.PathEscape(client), nil)
	if err != nil {
		return err
	}
	pub, err := wire.ParseKServerPub(b)
	if err != nil {
		return err
	}
	k, err := c.PseudonymFor(client)
	if err != nil {
		return err
	}
	sealed, err := wire.SealGrant(pub, k.Seed())
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, "/v1/grants", (&wire.Grant{To: client, Sealed: sealed}).Marshal())
	return err
}

// FetchPseudonyms downloads and opens every grant for this client (one HPKE decryption
// each: the cost the report's Fig. 11 shows growing with the number of pseudonyms).
func (c *Client) FetchPseudonyms(ctx context.Context) ([]ed25519.PrivateKey, error) {
	k, err := c.cred.ClientKeyPair()
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, ErrNoClientKey
	}
	b, err := c.do(ctx, http.MethodGet, "/v1/grants", nil)
	if err != nil {
		return nil, err
	}
	g, err := wire.ParseGrants(b)
	if err != nil {
		return nil, err
	}
	var out []ed25519.PrivateKey
	for _, s := range g.Sealed {
		seed, err := wire.OpenGrant(k, s)
		if err != nil {
			continue // not for this key (e.g. sealed before the client re-joined)
		}
		out = append(out, ed25519.NewKeyFromSeed(seed))
	}
	if len(out) > wire.MaxPseudonyms {
		out = out[:wire.MaxPseudonyms]
	}
	return out, nil
}
