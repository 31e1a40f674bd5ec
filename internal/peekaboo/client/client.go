package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/verr"
)

// Errors callers branch on.
var (
	ErrRejected  = errors.New("k-server rejected the query")
	ErrIntegrity = verr.NewIntegrity("v-server returned a result the k-server did not match") // and verr.ErrIntegrity
	ErrNoOwner   = errors.New("credential has no owner key (run veil peekaboo join)")
)

// Client talks to one V-server as one user.
type Client struct {
	cred     *wire.UserCred
	kpub     *wire.KServerPub
	ownerKey []byte
	base     string
	http     *http.Client
	now      func() time.Time
	pirMu    sync.Mutex
	pir      pir.Params // private-query table geometry, once fetched
}

// New makes a client from a credential file's contents.
func New(cred []byte) (*Client, error) {
	c, kpub, err := wire.ParseUserCred(cred)
	if err != nil {
		return nil, err
	}
	tc, err := tlsconf.ClientConfig([]byte(c.CA), nil)
	if err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16,
		DialContext:           (&net.Dialer{Timeout: ReplyTimeout}).DialContext,
		TLSHandshakeTimeout:   ReplyTimeout,
		ResponseHeaderTimeout: ReplyTimeout}
	return &Client{cred: c, kpub: kpub, ownerKey: c.OwnerKeyBytes(), base: strings.TrimSuffix(c.Endpoint, "/"), now: time.Now,
		http: &http.Client{Transport: tr}}, nil
}

// ReplyTimeout bounds how long a client waits for the V-server to connect, shake hands
// and start its answer. A V-server that stopped answering (suspended, hung) used to keep
// a search waiting forever. It is longer than the V-server's own wait for the K-server
// (its --relay-timeout, 1 minute by default), so a slow K-server is reported by the
// V-server, which knows which it is.
var ReplyTimeout = 2 * time.Minute

// Join returns cred with a fresh owner key and client key added (those it lacks).
func Join(cred []byte) ([]byte, error) {
	c, _, err := wire.ParseUserCred(cred)
	if err != nil {
		return nil, err
	}
	if c.OwnerKey == "" {
		k := make([]byte, wire.SecretBytes)
		rand.Read(k)
		c.OwnerKey = base64.RawURLEncoding.EncodeToString(k)
	}
	if c.ClientKey == "" {
		k, err := wire.GenerateKServerKey()
		if err != nil {
			return nil, err
		}
		kb, err := k.Marshal()
		if err != nil {
			return nil, err
		}
		c.ClientKey = base64.StdEncoding.EncodeToString(kb)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	return append(b, '\n'), err
}

// User is the credential's user name.
func (c *Client) User() string { return c.cred.User }

// KServerFingerprint identifies the pinned K-server key (check it with the K-server's operator).
func (c *Client) KServerFingerprint() string { return c.kpub.Fingerprint() }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// do sends one request and returns the body of a 200 reply, or the server's one-line error.
func (c *Client) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(c.cred.User, c.cred.Secret)
	resp, err := c.http.Do(req)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
		return nil, fmt.Errorf("v-server at %s: no answer within %s (stopped, hung or overloaded: try again later, or tell its operator): %w", c.base, ReplyTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("v-server: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("v-server reply: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &ServerError{Code: resp.StatusCode, Msg: strings.TrimSpace(string(b)), Settling: resp.Header.Get(wire.HeaderUnacked) != ""}
	}
	return b, nil
}

// ServerError is the V-server's one-line answer to a request it did not carry out.
type ServerError struct {
	Code int // HTTP status
	Msg  string
	// Settling: a publication whose chunk the V-server stored but the K-server did not
	// acknowledge; the V-server lists its pairs as unacknowledged until it has removed
	// them from both servers, and its message says so (wire.HeaderUnacked).
	Settling bool
}

func (e *ServerError) Error() string { return "v-server: " + e.Msg }

// Refused reports whether err is the V-server refusing a request (a 4xx answer): it
// refuses a publication before storing anything, or after removing what it stored for a
// chunk the K-server refused, so none of the chunk's pairs is kept.
func Refused(err error) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code >= 400 && se.Code < 500
}

// Settling reports whether err is a publication the V-server will undo (ServerError.Settling).
// Other failures (no answer, a V-server before it) may leave the pairs in flight published,
// or listed without being published.
func Settling(err error) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Settling
}

// AddUser asks the V-server (with the administrator's credential) for a new user's
// credential.
func AddUser(ctx context.Context, adminCred []byte, name string) ([]byte, error) {
	c, err := New(adminCred)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	body, _ := json.Marshal(map[string]string{"name": name})
	return c.do(ctx, http.MethodPost, "/v1/admin/users", body)
}

const ownerAAD = "veil peekaboo v1 owner"

func (c *Client) sealOwner(id wire.ID, key string) ([]byte, error) {
	a, err := chacha20poly1305.NewX(c.ownerKey)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(key)+a.Overhead())
	rand.Read(nonce)
	return a.Seal(nonce, nonce, []byte(key), append([]byte(ownerAAD), id[:]...)), nil
}

func (c *Client) openOwner(id wire.ID, blob []byte) (string, error) {
	a, err := chacha20poly1305.NewX(c.ownerKey)
	if err != nil {
		return "", err
	}
	if len(blob) < a.NonceSize() {
		return "", errors.New("owner blob too short")
	}
	pt, err := a.Open(nil, blob[:a.NonceSize()], blob[a.NonceSize():], append([]byte(ownerAAD), id[:]...))
	if err != nil {
		return "", fmt.Errorf("pair %x: owner blob does not open (another owner key?)", id[:4])
	}
	return string(pt), nil
}

// KServerPub is the pinned K-server key (for benchmarks that time the steps one by one).
func (c *Client) KServerPub() *wire.KServerPub { return c.kpub }
