package storage

import (
	"errors"
	"net"
)

// DialFailed returns the dial error in err when a request never reached its service: no
// connection was made (nothing listens, no route, the dial timed out), so nothing of the
// request was sent. nil otherwise. Failover moves such a request to another node, a run
// stops on it instead of failing every file, and commands name the service, not the
// object, in its error.
func DialFailed(err error) *net.OpError {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return op
	}
	return nil
}
