package ksclient

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"strings"

	"github.com/veil-project/veil/internal/mle"
)

// Check derives the key of one random input, as a put would, so that a credential is tried
// before it is relied on ('veil init'): it costs one evaluation of the client's rate-limit
// budget (and, in a delay mode, one delay). Its error is a derivation's; CredentialProblem
// tells a credential that is wrong from a key server that is down or rate-limiting.
func (c *Client) Check(ctx context.Context) error {
	var d mle.Digest
	rand.Read(d[:])
	_, err := c.DeriveKeys(ctx, []mle.Digest{d})
	return err
}

// Where names the key server this client asks: its URL, or its replicas' URLs joined by
// commas.
func (c *Client) Where() string {
	us := c.opts.URL
	if len(c.opts.Replicas) > 0 {
		us += "," + strings.Join(c.opts.Replicas, ",")
	}
	return us
}

// CredentialProblem says what is wrong when err (of Check, or of a derivation) shows that
// the key server and the credential do not go together, in words that follow "key server
// URL": the server refused the client certificate or does not know it (403, a TLS alert in the
// handshake),
// the server's certificate or key is not the one the credential pins, or nothing at the
// URL serves the credential's key. It is "" for every other error: a key server that does
// not answer (down, unreachable, a 5xx such as its rate-limit store being down) or
// rate-limits (it authorized the client before it counted), which are no fault of the
// credential.
func CredentialProblem(err error) string {
	var cv *tls.CertificateVerificationError
	var op *net.OpError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrUnauthorized):
		return "refused the credential (" + strings.TrimPrefix(err.Error(), ErrUnauthorized.Error()+": ") + ")"
	case errors.As(err, &cv):
		return "is not the server the credential trusts (" + cv.Err.Error() + ")"
	case errors.As(err, &op) && op.Op == "remote error": // crypto/tls's word for an alert the server sent
		return "refused the TLS handshake (" + op.Error() + "; the credential's client certificate is not one it issued?)"
	case errors.Is(err, ErrBadResponse):
		return "answered under a key the credential does not pin (" + err.Error() + ")"
	case errors.Is(err, ErrUnexpected):
		return "does not serve the credential (" + strings.TrimPrefix(err.Error(), ErrUnexpected.Error()+": ") + ")"
	}
	return ""
}
