package keyserver

import (
	"fmt"

	"github.com/veil-project/veil/internal/kswire"
)

// maxUDPPayload is the largest UDP payload over IPv4 (65535 - 8 - 20 bytes); the session
// grant's 16-bit field could say more, which no datagram can carry.
const maxUDPPayload = 65507

// checkLimits refuses limits that cannot work, instead of granting nonsense (a max
// datagram of 65536 used to be granted as 0).
func (c *Config) checkLimits() error {
	if lo := kswire.MinDatagram; c.MaxDatagram < lo || c.MaxDatagram > maxUDPPayload {
		return fmt.Errorf("max datagram %d bytes: want %d to %d", c.MaxDatagram, lo, maxUDPPayload)
	}
	if c.MaxClientSess > c.MaxSessions {
		return fmt.Errorf("max sessions per client (%d) above max sessions (%d)", c.MaxClientSess, c.MaxSessions)
	}
	return nil
}
