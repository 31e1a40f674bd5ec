package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"
)

// DefaultShutdownTimeout is how long a server waits for in-flight requests to finish after
// its context is cancelled, unless its configuration says otherwise.
const DefaultShutdownTimeout = 30 * time.Second

// Server is what every veil server is once opened.
type Server interface {
	// Serve answers requests on ls until ctx is cancelled or serving fails, then drains
	// in-flight work (bounded by the server's shutdown timeout) and closes ls. A stop by
	// ctx returns nil.
	Serve(ctx context.Context, ls Listeners) error
	// Close releases what Open acquired. Call it once, after Serve returned.
	Close() error
}

// Listeners are the sockets a server answers on, bound by the caller so that it knows the
// addresses (port 0 in tests) before Serve.
type Listeners struct {
	HTTP   net.Listener   // the HTTP(S) API (TLS is the server's business)
	Packet net.PacketConn // an optional datagram transport; nil for none
}

// Listen binds httpAddr (TCP) and, unless packetAddr is "" or "-", packetAddr (UDP).
func Listen(httpAddr, packetAddr string) (Listeners, error) {
	var ls Listeners
	var err error
	if ls.HTTP, err = net.Listen("tcp", httpAddr); err != nil {
		return ls, err // net's error names the address: "listen tcp ADDR: bind: ..."
	}
	if packetAddr != "" && packetAddr != "-" {
		if ls.Packet, err = net.ListenPacket("udp", packetAddr); err != nil {
			ls.HTTP.Close()
			return Listeners{}, err
		}
	}
	return ls, nil
}

// Addr is the HTTP listener's address, or "" without one.
func (ls Listeners) Addr() string {
	if ls.HTTP == nil {
		return ""
	}
	return ls.HTTP.Addr().String()
}

// PacketAddr is the datagram socket's address, or "" without one.
func (ls Listeners) PacketAddr() string {
	if ls.Packet == nil {
		return ""
	}
	return ls.Packet.LocalAddr().String()
}

// Close closes the sockets (for listeners that never reached Serve).
func (ls Listeners) Close() error {
	var errs []error
	if ls.HTTP != nil {
		errs = append(errs, ls.HTTP.Close())
	}
	if ls.Packet != nil {
		errs = append(errs, ls.Packet.Close())
	}
	return errors.Join(errs...)
}

// Logger is a server's logger: l tagged with the server's name, or a discarding logger.
func Logger(l *slog.Logger, name string) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.With("server", name)
}

// ShutdownTimeout is d, or DefaultShutdownTimeout when d is not positive.
func ShutdownTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultShutdownTimeout
	}
	return d
}
