package server

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const linkVectorFile = "../../../testdata/metal/link-vectors.json"

// linkVector pins docs/formats/metal-server.md "The 2PC link": Server 2's answer to the
// upgrade (version 2, and version 1 without the header), an announcement, a query about
// three ids and Server 2's answer to it; the liveness probe's upgrade and byte.
type linkVector struct {
	Upgrade, UpgradeV1 string
	Announcement       string // an access with id 00 01 .. 0f
	Query              string // that access, an account with id 10 .. 1f, a send with id 20 .. 2f
	Answers            string // run, not yet, skip
	// The liveness probe (session 17): Server 1's upgrade request (Host 127.0.0.1:8443),
	// Server 2's answer, and the byte Server 1 sends and Server 2 echoes.
	AliveRequest, Alive string
	AliveByte           string
}

func vectorAnnounces() []announce {
	as := []announce{{kind: kindAccess}, {kind: kindAccount}, {kind: kindSend}}
	for i := range as {
		for k := range as[i].id {
			as[i].id[k] = byte(16*i + k)
		}
	}
	return as
}

func TestLinkVectors(t *testing.T) {
	as := vectorAnnounces()
	v := linkVector{Upgrade: upgradeResponse(true), UpgradeV1: upgradeResponse(false),
		Announcement: hex.EncodeToString(as[0].marshal()), Query: hex.EncodeToString(marshalQuery(as)),
		Answers:      hex.EncodeToString([]byte{answerRun, answerNotYet, answerSkip}),
		AliveRequest: upgradeRequest("/v1/peer/alive", "127.0.0.1:8443", aliveProto), Alive: aliveResponse,
		AliveByte: hex.EncodeToString([]byte{aliveByte})}
	testutil.Golden(t, linkVectorFile, v)
	q, err := parseAsk(testutil.Unhex(t, v.Query))
	if err != nil || len(q) != 3 || q[0] != as[0] || q[1] != as[1] || q[2] != as[2] {
		t.Fatalf("query vector parsed to %v, %v", q, err)
	}
	a, err := parseAsk(testutil.Unhex(t, v.Announcement))
	if err != nil || len(a) != 1 || a[0] != as[0] {
		t.Fatalf("announcement vector parsed to %v, %v", a, err)
	}
	if err := checkAnswers(testutil.Unhex(t, v.Answers), 3); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains([]byte(v.Upgrade), []byte("\r\nVeil-Metal-Link: 2\r\n")) || bytes.Contains([]byte(v.UpgradeV1), []byte("Veil-Metal-Link")) {
		t.Fatalf("upgrade answers %q, %q", v.Upgrade, v.UpgradeV1)
	}
}

// TestParseAskRefusals: each malformed message from Server 1 is refused with a one-line
// error naming what was wrong.
func TestParseAskRefusals(t *testing.T) {
	for _, c := range []struct {
		msg  []byte
		want string
	}{
		{[]byte{kindQuery}, "0 bytes after 'Q'"},
		{append(marshalQuery(vectorAnnounces()), 0), "52 bytes after 'Q'"},
		{[]byte{kindAccess, 1}, "2 bytes, want 17"},
		{append([]byte{'Z'}, make([]byte, idLen)...), "unknown call kind 0x5a"},
		{append([]byte{kindQuery, kindPing}, make([]byte, idLen)...), "unknown call kind 0x50"},
	} {
		if _, err := parseAsk(c.msg); err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%x: %v, want %q", c.msg, err, c.want)
		}
	}
	if err := checkAnswers([]byte{1, 3}, 2); err == nil || err.Error() != "bad answer from server 2: 0x03" {
		t.Errorf("answer 0x03: %v", err)
	}
	if err := checkAnswers([]byte{1}, 2); err == nil || err.Error() != "bad answer from server 2: 1 bytes for 2 ids" {
		t.Errorf("short answer: %v", err)
	}
}
