package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/share"
)

// A download that keeps coming is received however long it takes; one that stops is cut
// after the client's stall timeout with a one-line error. The client's http.Client
// timeout (10 minutes; 1 s here) bounded the whole download, so a long list over a slow
// network was cut every time. A stand-in for Server 1 trickles the list (the real
// servers' side of this is internal/metal/server's TestSlowListDownloadNotCut).
func TestSlowListDownloadReceived(t *testing.T) {
	const n = 200
	body := make([]byte, n*share.EntryLen)
	rand.Read(body)
	reply := share.EncodeListReply(0, 1, body)
	var pause, stall time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/share/list" {
			return // Server 2's empty answer
		}
		rc := http.NewResponseController(w)
		for i := 0; i < len(reply); i += 1000 {
			w.Write(reply[i:min(i+1000, len(reply))])
			rc.Flush()
			time.Sleep(pause)
			if i == 10000 {
				time.Sleep(stall)
			}
		}
	}))
	defer srv.Close()
	hc := srv.Client()
	hc.Timeout = time.Second // the calls' bound
	c := &Client{base: [2]string{srv.URL, srv.URL + "/2"}, h: [2]*http.Client{hc, hc}, Stall: 500 * time.Millisecond}
	p := func() *Profile {
		return &Profile{Share: &ShareRecord{ID: 1, AK: hex.EncodeToString(make([]byte, 16)), BK: hex.EncodeToString(make([]byte, 16)),
			PK1: hex.EncodeToString(oddModulus()), PK2: hex.EncodeToString(oddModulus())},
			Accounts: []AccountRecord{{Capability: hex.EncodeToString(make([]byte, ac.CapabilityLen)), First: 1, Count: 1}}}
	}
	pause = 100 * time.Millisecond // 20 pieces: 2 s, each within the stall timeout
	start := time.Now()
	_, entries, _, err := c.Receive(context.Background(), p())
	if err != nil || entries != n {
		t.Fatalf("a list trickling in for %v: %d entries, %v", time.Since(start), entries, err)
	}
	pause, stall = 0, 2*time.Second
	_, _, _, err = c.Receive(context.Background(), p())
	if err == nil || !strings.Contains(err.Error(), "stalled") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a list that stops coming for 2 s (stall timeout 0.5 s): %v", err)
	}
}
