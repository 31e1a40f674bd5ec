package client

import (
	"context"
	"crypto/aes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/share"
)

// A receive downloads every entry since the cursor (paper §6.2: the broadcast must be
// linear; 96 bytes per entry). A list of 700,000 entries (67 MB; e.g. a profile's first
// receive after 72 h of sends at the servers' ~0.3 s per SendCapability, or any user
// filling the list with refused sends, which still append entries) must be received, not
// cut at the client's generic 64 MiB reply limit and then refused as "entries announced,
// bytes follow", which leaves the cursor where it was: every later receive fails the same
// way until the epochs expire.
func TestReceiveLongList(t *testing.T) {
	if testing.Short() {
		t.Skip("67 MB list")
	}
	const n = 700_000
	var bk [16]byte
	rand.Read(bk[:])
	body := make([]byte, n*share.EntryLen)
	rand.Read(body)
	// The last entry is for this user: file 42, read, anonym 3.
	blk, _ := aes.NewCipher(bk[:])
	aead, _ := eax.NewEAX(blk)
	payload := make([]byte, 64)
	payload[0], payload[1] = 1, byte(ac.Read)
	binary.LittleEndian.PutUint32(payload[4:], 3)
	binary.LittleEndian.PutUint64(payload[56:], 42)
	last := body[(n-1)*share.EntryLen:]
	aead.Seal(last[16:16], last[:16], payload, nil)
	reply := share.EncodeListReply(0, 1, body)
	body = nil

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/share/list": // Server 1: the list
			w.Write(reply)
		case "/2/v1/share/list": // Server 2: the credential check's answer
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := &Client{base: [2]string{srv.URL, srv.URL + "/2"}, h: [2]*http.Client{srv.Client(), srv.Client()}}
	p := &Profile{Share: &ShareRecord{ID: 1, AK: hex.EncodeToString(make([]byte, 16)), BK: hex.EncodeToString(bk[:]),
		PK1: hex.EncodeToString(oddModulus()), PK2: hex.EncodeToString(oddModulus())},
		Accounts: []AccountRecord{{Capability: hex.EncodeToString(make([]byte, ac.CapabilityLen)), First: 1, Count: 1}}}
	got, entries, _, err := c.Receive(context.Background(), p)
	if err != nil {
		t.Fatalf("receive of a %d-entry list (%d bytes): %v", n, len(reply), err)
	}
	if entries != n || len(got) != 1 || got[0].File != 42 || p.Share.Cursor != 1 {
		t.Fatalf("received %+v of %d entries, cursor %d", got, entries, p.Share.Cursor)
	}
}

// oddModulus is a 2048-bit odd number: ShareKeys parses the profile's Paillier keys.
func oddModulus() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = 0xff
	}
	return b
}
