package server

import (
	"net/http"
)

// handleInfo: the deployment's parameters (16 bytes), this server's DataORAM public key
// share, the other server's (32 bytes each; the identity until the servers first met).
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	st, err := s.store.LoadState()
	if err != nil || st == nil {
		http.Error(w, "state unavailable", http.StatusServiceUnavailable)
		return
	}
	out := append(st.P.Encode(), st.Key.X.Bytes()...)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(append(out, st.PeerX.Bytes()...))
}
