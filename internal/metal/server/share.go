package server

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/veil-project/veil/internal/metal/share"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Metal-SHARE on the servers (paper Section 6, docs/formats/metal-share.md): enrolment and
// SendCapability are 2PC calls queued like accounts and accesses; the Paillier public key
// and Server 1's broadcast list are plain GETs.

const (
	kindEnroll = 'E'
	kindSend   = 'S'
)

func init() {
	kindNames[kindEnroll] = "share-enroll"
	kindNames[kindSend] = "share-send"
}

// openShare loads (or, for a server initialized before sharing existed, creates) this
// server's sharing keys, and on Server 1 the broadcast list.
func (s *Server) openShare() error {
	var err error
	if s.shKeys, err = share.LoadKeys(s.db, s.role, rand.Reader); err != nil {
		return err
	}
	if s.role == 1 {
		if s.list, err = share.OpenList(s.db); err != nil {
			return err
		}
		s.list.Epoch, s.list.Retention = s.cfg.ShareEpoch, s.cfg.ShareRetention
	}
	return nil
}

// newShareParty builds the sharing party for a fresh 2PC session.
func (s *Server) newShareParty(sess *twopc.Session) error {
	st, err := s.store.LoadState()
	if err != nil {
		return err
	}
	s.sh, err = share.NewParty(sess, s.shKeys, st.AC.KeyShare, rand.Reader)
	return err
}

func sharePartLen(kind byte) int {
	if kind == kindEnroll {
		return share.EnrollRequestLen
	}
	return share.SendPartLen
}

// callShare runs one sharing call; Server 1 appends the entry to the list (durably)
// before the client hears back.
func (s *Server) callShare(j *job) result {
	start := time.Now()
	var out []byte
	var err error
	if j.kind == kindEnroll {
		out, err = s.sh.Enroll(j.part)
	} else {
		var entry []byte
		if out, entry, err = s.sh.Send(j.part); err == nil && entry != nil {
			err = s.list.Append(entry)
		}
	}
	s.m.seconds.WithLabelValues(kindNames[j.kind]).Observe(time.Since(start).Seconds())
	return result{out: out, err: err}
}

// handleShareKey: this server's Paillier public key (N, 256 bytes), for anonyms.
func (s *Server) handleShareKey(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(s.shKeys.SK.PublicKey.Bytes())
}

// handleShareList: Server 1's broadcast list from epoch ?from= on.
func (s *Server) handleShareList(w http.ResponseWriter, r *http.Request) {
	from, err := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64)
	if err != nil {
		http.Error(w, "from must be an epoch number", http.StatusBadRequest)
		return
	}
	b, err := s.list.Since(from)
	if err != nil {
		s.log.Error("share list", "err", err)
		http.Error(w, "share list unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(b)
}

// AppendShareEntries appends entries to Server 1's broadcast list as if sends had made
// them: `veil bench metal --share` fills the list to the paper's 10^4 entries this way
// (every entry is 96 bytes of EAX output; which key made it does not change the cost of a
// download).
func (s *Server) AppendShareEntries(entries [][]byte) error {
	if s.list == nil {
		return errors.New("only Server 1 holds the broadcast list")
	}
	for _, e := range entries {
		if err := s.list.Append(e); err != nil {
			return err
		}
	}
	return nil
}
