package keyserver

// warnLimiter logs an evaluation refused because the rate-limit store failed, over either
// transport, at most once per s.limWarn's interval (ratelog.DefaultEvery: while Redis is
// down every evaluation of every client is refused, and a line each would flood the log);
// the line counts the refusals left unlogged before it. Over UDP the refusal is a drop
// the client cannot tell from a lost datagram, so this line is the only trace of it
// (session 16: HTTPS logged it, UDP did not).
func (s *Server) warnLimiter(transport, client string, err error) {
	if ok, held := s.limWarn.Due(); ok {
		s.log.Warn("evaluation refused", "client", client, "transport", transport, "reason", "limiter",
			"err", err, "unlogged_before", held)
	}
}
