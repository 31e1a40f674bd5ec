package dupless

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// serviceDown is a command's first contact with a storage service that took no
// connection: it says so in the user's words, with what to do (found by a user
// walkthrough: "key check: 127.0.0.1:7999: connection refused" meant nothing to a user).
type serviceDown struct {
	addr string // host:port, or "" when the error did not name it
	op   *net.OpError
	err  error
}

func (e *serviceDown) Error() string {
	at := ""
	if e.addr != "" {
		at = " at " + e.addr
	}
	cause := e.op.Err
	if in := errors.Unwrap(cause); in != nil && !strings.Contains(cause.Error(), "tls") {
		cause = in // "connect: connection refused" -> "connection refused"
	}
	return fmt.Sprintf("the storage service%s does not answer (%v): start it, or check the storage location in your profile", at, cause)
}

func (e *serviceDown) Unwrap() error { return e.err }

// notAnswering is err as a serviceDown when it is a connection the storage service did not
// take (nothing listens, no route, the dial timed out), else nil.
func notAnswering(err error) error {
	op := storage.DialFailed(err)
	if op == nil || op.Err == nil {
		return nil
	}
	e := &serviceDown{op: op, err: err}
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			e.addr = u.Host
		}
	}
	if e.addr == "" && op.Addr != nil {
		e.addr = op.Addr.String()
	}
	return e
}
