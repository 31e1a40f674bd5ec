package ac

import (
	"bytes"
	"strings"
	"testing"
)

func TestNewAccess(t *testing.T) {
	capability := bytes.Repeat([]byte{7}, CapabilityLen)
	r, blk, err := NewAccess(capability, 9, Write, []byte("abc"), 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.File != 9 || r.Op != Write || !bytes.Equal(r.Capability[:], capability) {
		t.Fatalf("request %+v", r)
	}
	if !bytes.Equal(blk, []byte("abc\x00\x00\x00\x00\x00")) {
		t.Fatalf("block %q, want abc zero-padded to 8 bytes", blk)
	}
	if _, blk, err = NewAccess(capability, 9, Read, nil, 8); err != nil || !bytes.Equal(blk, make([]byte, 8)) {
		t.Fatalf("read: block %q, err %v; want 8 zero bytes", blk, err)
	}
	for _, c := range []struct {
		capability []byte
		op         Perm
		data       []byte
		want       string
	}{
		{capability[1:], Read, nil, "capability of 47 bytes, want 48"},
		{capability, Write, make([]byte, 9), "9 bytes do not fit a block of 8"},
		{capability, Read | Write, nil, "operation must be read or write"},
		{capability, Share, nil, "operation must be read or write"},
	} {
		if _, _, err := NewAccess(c.capability, 1, c.op, c.data, 8); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewAccess(op %d, %d-byte capability, %d bytes): err %v, want %q", c.op, len(c.capability), len(c.data), err, c.want)
		}
	}
}
