package server

import (
	"net/http"
)

// handleInfo: the deployment's parameters (16 bytes), this server's DataORAM public key
// share, the other server's (32 bytes each; the identity until the servers first met).
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	p, x, peerX, err := s.store.PublicInfo() // the state's header only, not its trees
	if err != nil {
		http.Error(w, "state unavailable", http.StatusServiceUnavailable)
		return
	}
	out := append(p.Encode(), x.Bytes()...)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(append(out, peerX.Bytes()...))
}
