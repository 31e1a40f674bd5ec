package storewire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const moveVectorFile = "../../testdata/storewire/move.json"

// moveVector is one vector of testdata/storewire/move.json: a move body as sent, and what
// the service makes of it.
type moveVector struct {
	Comment string `json:"comment"`
	Body    string `json:"body"`            // the JSON body, as text
	Result  string `json:"result"`          // "ok", or the API error code the service answers
	Src     string `json:"src,omitempty"`   // ok: the source path
	Dst     string `json:"dst,omitempty"`   // ok: the destination path
	Match   string `json:"match,omitempty"` // ok: the condition (hex SHA-256), "" for none
	Older   string `json:"older"`           // what a service older than conditional moves answers
}

func genMoveVectors() []moveVector {
	enc := func(m MoveRequest) string { b, _ := json.Marshal(m); return string(b) }
	h := sha256.Sum256([]byte("a record"))
	x := hex.EncodeToString(h[:])
	plain := enc(NewMoveRequest("k/d", "f.key", "", "top", nil))
	cond := enc(NewMoveRequest("k/d", "f.key", ".veil/versions/"+x[:2], x, &h))
	out := []moveVector{
		{Comment: "unconditional move (every service)", Body: plain, Result: "ok", Src: "k/d/f.key", Dst: "top", Older: "ok"},
		{Comment: "conditional move (session 14): only while k/d/f.key holds content of that SHA-256, else 412 changed",
			Body: cond, Result: "ok", Src: "k/d/f.key", Dst: ".veil/versions/" + x[:2] + "/" + x, Match: x, Older: CodeBadRequest},
	}
	bad := func(comment, body string) {
		out = append(out, moveVector{Comment: comment, Body: body, Result: CodeBadRequest, Older: CodeBadRequest})
	}
	withMatch := func(m string) string {
		return `{"src_dir":"k","src_name":"f","dst_dir":"","dst_name":"g","match":` + m + `}`
	}
	bad("a match in upper case (not canonical)", withMatch(`"`+strings.ToUpper(x)+`"`))
	bad("a match of 63 digits", withMatch(`"`+x[:63]+`"`))
	bad("a match of 65 digits", withMatch(`"`+x+`0"`))
	bad("a match of 64 characters that are not hex", withMatch(`"`+strings.Repeat("g", 64)+`"`))
	bad("an empty match", withMatch(`""`))
	bad("a match that is not a string", withMatch(`7`))
	bad("a null match", withMatch(`null`))
	bad("an unknown field", `{"src_dir":"k","src_name":"f","dst_dir":"","dst_name":"g","matches":"`+x+`"}`)
	bad("trailing data", plain+"}")
	bad("two objects", plain+plain)
	return out
}

// olderMoveRequest is the move body as services before conditional moves parse it.
type olderMoveRequest struct {
	SrcDir  string `json:"src_dir"`
	SrcName string `json:"src_name"`
	DstDir  string `json:"dst_dir"`
	DstName string `json:"dst_name"`
}

func TestMoveVectors(t *testing.T) {
	var vs []moveVector
	testutil.Vectors(t, moveVectorFile, &vs, func() any { return genMoveVectors() })
	for _, v := range vs {
		m, match, err := ReadMove(strings.NewReader(v.Body))
		if v.Result != "ok" {
			if !errors.Is(err, ErrBadMove) || m != (MoveRequest{}) || match != nil {
				t.Errorf("%s: got %+v %v %v, want %s", v.Comment, m, match, err, v.Result)
			}
		} else {
			got := moveVector{Comment: v.Comment, Body: v.Body, Result: "ok", Older: v.Older,
				Src: m.SrcDir + "/" + m.SrcName, Dst: strings.TrimPrefix(m.DstDir+"/"+m.DstName, "/")}
			if match != nil {
				got.Match = hex.EncodeToString(match[:])
			}
			if err != nil || got != v {
				t.Errorf("%s: got %+v %v, want %+v", v.Comment, got, err, v)
			}
			if again, _ := json.Marshal(NewMoveRequest(m.SrcDir, m.SrcName, m.DstDir, m.DstName, match)); string(again) != v.Body {
				t.Errorf("%s: the client's encoding %s differs from the vector", v.Comment, again)
			}
		}
		// How an older service (whose parser knew the four path fields only) answers the
		// body: the client's sign that conditional moves are not there (remote.MoveMatch).
		var old olderMoveRequest
		dec := json.NewDecoder(strings.NewReader(v.Body))
		dec.DisallowUnknownFields()
		older := "ok"
		if err := dec.Decode(&old); err != nil || strings.TrimLeft(v.Body[dec.InputOffset():], " \t\r\n") != "" {
			older = CodeBadRequest
		}
		if older != v.Older {
			t.Errorf("%s: an older service's parser says %s, the vector %s", v.Comment, older, v.Older)
		}
	}
}

// A body over MaxMoveBody is refused, whatever it holds.
func TestMoveBodyLimit(t *testing.T) {
	body := `{"src_dir":"a","src_name":"b","dst_dir":"","dst_name":"c"}`
	if _, _, err := ReadMove(strings.NewReader(body + strings.Repeat(" ", MaxMoveBody-len(body)))); err != nil {
		t.Fatalf("a body of exactly the limit: %v", err)
	}
	if _, _, err := ReadMove(strings.NewReader(body + strings.Repeat(" ", MaxMoveBody-len(body)+1))); !errors.Is(err, ErrBadMove) {
		t.Fatalf("a body past the limit: %v", err)
	}
}

// FuzzReadMove: arbitrary bodies never panic, an error comes with no request, and what
// parses is a request the client would encode with the same meaning.
func FuzzReadMove(f *testing.F) {
	for _, v := range genMoveVectors() {
		f.Add([]byte(v.Body))
	}
	f.Add([]byte(`{"src_dir":1}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, match, err := ReadMove(bytes.NewReader(b))
		if err != nil {
			if m != (MoveRequest{}) || match != nil {
				t.Fatal("partial result with an error")
			}
			return
		}
		again, _ := json.Marshal(NewMoveRequest(m.SrcDir, m.SrcName, m.DstDir, m.DstName, match))
		m2, match2, err := ReadMove(bytes.NewReader(again))
		if err != nil || m2.SrcDir != m.SrcDir || m2.SrcName != m.SrcName || m2.DstDir != m.DstDir || m2.DstName != m.DstName ||
			(match == nil) != (match2 == nil) || match != nil && *match != *match2 {
			t.Fatalf("%q re-encoded as %q reads %+v %v %v", b, again, m2, match2, err)
		}
	})
}
