package storewire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MoveRequest is the body of POST /v1/move (docs/formats/store-api.md, "JSON bodies").
// Match, when present, makes the move conditional (session 14): the lowercase hex SHA-256
// that the source file's content must have, else the move is 412 changed and moves
// nothing. A service older than it refuses a body with a match as 400 bad_request
// (unknown field), moving nothing.
type MoveRequest struct {
	SrcDir  string  `json:"src_dir"`
	SrcName string  `json:"src_name"`
	DstDir  string  `json:"dst_dir"`
	DstName string  `json:"dst_name"`
	Match   *string `json:"match,omitempty"`
}

// MaxMoveBody bounds a move body, white space included.
const MaxMoveBody = 64 << 10

// ErrBadMove is a move body that does not parse (400 bad_request).
var ErrBadMove = errors.New("malformed move body")

// NewMoveRequest returns the body of a move of srcDir/srcName to dstDir/dstName, conditional
// on the source's content hashing to *match unless match is nil.
func NewMoveRequest(srcDir, srcName, dstDir, dstName string, match *[32]byte) MoveRequest {
	m := MoveRequest{SrcDir: srcDir, SrcName: srcName, DstDir: dstDir, DstName: dstName}
	if match != nil {
		x := hex.EncodeToString(match[:])
		m.Match = &x
	}
	return m
}

// ReadMove parses a move body strictly: one JSON object, known fields only, nothing but
// white space after it, at most MaxMoveBody bytes in all, and a match (if any) of exactly
// 64 lowercase hex digits. It returns the request and its condition (nil: none); any
// error wraps ErrBadMove and comes with a zero request. (json.Decoder.More is no test for
// trailing data: it is false before a ']' or '}', and a body cut at the limit hid whatever
// followed.)
func ReadMove(r io.Reader) (MoveRequest, *[32]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxMoveBody+1))
	switch {
	case err != nil:
		return MoveRequest{}, nil, fmt.Errorf("%w: reading the body: %w", ErrBadMove, err)
	case len(b) > MaxMoveBody:
		return MoveRequest{}, nil, fmt.Errorf("%w: longer than %d bytes", ErrBadMove, MaxMoveBody)
	}
	var m struct {
		SrcDir  string          `json:"src_dir"`
		SrcName string          `json:"src_name"`
		DstDir  string          `json:"dst_dir"`
		DstName string          `json:"dst_name"`
		Match   json.RawMessage `json:"match"` // nil when absent; null is refused
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return MoveRequest{}, nil, fmt.Errorf("%w: not a JSON move request: %w", ErrBadMove, err)
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) != 0 {
		return MoveRequest{}, nil, fmt.Errorf("%w: trailing data after the JSON object", ErrBadMove)
	}
	req := MoveRequest{SrcDir: m.SrcDir, SrcName: m.SrcName, DstDir: m.DstDir, DstName: m.DstName}
	if m.Match == nil {
		return req, nil, nil
	}
	var x string
	if string(m.Match) == "null" || json.Unmarshal(m.Match, &x) != nil {
		return MoveRequest{}, nil, fmt.Errorf("%w: match %.70s is not a string", ErrBadMove, m.Match)
	}
	h, ok := lowerHexSum(x)
	if !ok {
		return MoveRequest{}, nil, fmt.Errorf("%w: match %.70q is not a SHA-256 in 64 lowercase hex digits", ErrBadMove, x)
	}
	req.Match = &x
	return req, h, nil
}

// lowerHexSum parses a SHA-256 written as exactly 64 lowercase hex digits.
func lowerHexSum(x string) (*[32]byte, bool) {
	var h [32]byte
	if len(x) != hex.EncodedLen(len(h)) {
		return nil, false
	}
	if _, err := hex.Decode(h[:], []byte(x)); err != nil || x != hex.EncodeToString(h[:]) {
		return nil, false
	}
	return &h, true
}
