package server

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/share"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Metal-SHARE on the servers (paper Section 6, docs/formats/metal-share.md): enrolment and
// SendCapability are 2PC calls queued like accounts and accesses; the Paillier public key
// and Server 1's broadcast list are plain GETs.

const (
	kindEnroll = 'E'
	kindSend   = 'S'
	kindList   = 'L' // the credential check of a broadcast-list download
)

func init() {
	kindNames[kindEnroll] = "share-enroll"
	kindNames[kindSend] = "share-send"
	kindNames[kindList] = "share-list"
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

// newShareParty builds the sharing party for a fresh 2PC session, with the capability key
// share of p (which loaded the state: loading it again would double the link's start).
func (s *Server) newShareParty(sess *twopc.Session, p *access.Party) error {
	var err error
	s.sh, err = share.NewParty(sess, s.shKeys, p.CapabilityKeyShare(), rand.Reader)
	return err
}

func sharePartLen(kind byte) int {
	switch kind {
	case kindEnroll:
		return share.EnrollRequestLen
	case kindList:
		return share.ListRequestLen
	}
	return share.SendPartLen
}

// callShare runs one sharing call; Server 1 appends the entry to the list (durably)
// before the client hears back.
func (s *Server) callShare(j *job) result {
	start := time.Now()
	var out []byte
	var err error
	switch j.kind {
	case kindEnroll:
		out, err = s.sh.Enroll(j.part)
	case kindList:
		var ok bool
		if ok, err = s.sh.CheckList(j.part); ok {
			out = []byte{1}
		} else {
			out = []byte{0}
		}
	default:
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

// errListAuth answers a download without a credential, or with one that is not an
// account capability.
const errListAuth = "downloading the broadcast list needs an account capability (veil metal account create; veil metal receive sends it)"

// handleShareList: a broadcast-list download (docs/formats/metal-share.md "Download"). The
// client sends each server its XOR share of an account capability, as for enrolment (the
// paper's receivers are the enrolled users: only they hold a broadcast key); both check it
// inside 2PC, learning only that some account holder downloads. Server 1 then streams the
// closed epochs from ?from= on; Server 2 answers an empty 200.
func (s *Server) handleShareList(w http.ResponseWriter, r *http.Request) {
	var from uint64
	if s.role == 1 {
		var err error
		if from, err = strconv.ParseUint(r.URL.Query().Get("from"), 10, 64); err != nil {
			http.Error(w, "from must be an epoch number", http.StatusBadRequest)
			return
		}
	}
	out, ok := s.runCall(w, r, kindList)
	if !ok {
		return
	}
	if len(out) != 1 || out[0] != 1 {
		http.Error(w, "refused by the servers: "+errListAuth, http.StatusForbidden)
		return
	}
	if s.role == 2 {
		return
	}
	if err := s.list.Prepare(); err != nil {
		s.log.Error("share list", "err", err)
		http.Error(w, "share list unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	// The stall deadline stays on the connection after the reply (an http.Server without a
	// WriteTimeout does not reset it): a request reusing it would fail, so it is not reused.
	w.Header().Set("Connection", "close")
	if err := s.list.WriteSince(newStallWriter(w, s.cfg.StallTimeout), from); err != nil {
		s.log.Warn("share list download cut", "err", err)
	}
}

// stallWriter bounds how long a download's client may take nothing: every piece of at
// most stallPiece bytes must be taken within stall, so a slow client that keeps reading
// gets the whole list however long it takes, and one that stopped holds its connection
// and goroutine for stall at most. (The reply had one deadline, the call timeout: a list
// that took longer to read was cut.)
type stallWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

const stallPiece = 64 << 10

func newStallWriter(w http.ResponseWriter, stall time.Duration) *stallWriter {
	return &stallWriter{w: w, rc: http.NewResponseController(w), stall: stall}
}

func (sw *stallWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k := min(len(b), stallPiece)
		sw.rc.SetWriteDeadline(time.Now().Add(sw.stall))
		m, err := sw.w.Write(b[:k])
		n += m
		if err != nil {
			return n, err
		}
		b = b[k:]
	}
	return n, nil
}

// handleShareListGet answers the unauthenticated GET of clients before the credential.
func (s *Server) handleShareListGet(w http.ResponseWriter, r *http.Request) {
	http.Error(w, errListAuth+": this veil is older than the server (update it)", http.StatusUnauthorized)
}

// AppendShareEntries appends entries to Server 1's broadcast list (in one transaction) as
// if sends had made them: `veil bench metal --share` fills the list to the paper's 10^4 entries this way
// (every entry is 96 bytes of EAX output; which key made it does not change the cost of a
// download).
func (s *Server) AppendShareEntries(entries [][]byte) error {
	if s.list == nil {
		return errors.New("only Server 1 holds the broadcast list")
	}
	return s.list.AppendAll(entries)
}
