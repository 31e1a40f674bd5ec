package share

import (
	"bytes"
	"testing"
)

// TestReadListReplyMatchesParse: the streaming reader (what a receive uses, so that a list
// of any length needs the memory of one entry) accepts what ParseListReply accepts, with
// the same epochs and entries, and refuses what it refuses.
func TestReadListReplyMatchesParse(t *testing.T) {
	good := EncodeListReply(1, 2, append(entry(1), entry(2)...))
	var seen [][]byte
	lr, n, err := ReadListReply(bytes.NewReader(good), func(e []byte) error {
		seen = append(seen, append([]byte(nil), e...))
		return nil
	})
	if err != nil || n != 2 || lr.First != 1 || lr.Next != 2 || !bytes.Equal(seen[0], entry(1)) || !bytes.Equal(seen[1], entry(2)) {
		t.Fatalf("read %+v, %d entries, %v", lr, n, err)
	}
	bad := map[string][]byte{
		"empty":        nil,
		"short":        good[:10],
		"version":      append([]byte{2}, good[1:]...),
		"truncated":    good[:len(good)-1],
		"extra":        append(append([]byte{}, good...), 0),
		"first > next": EncodeListReply(3, 2, nil),
		"count, none":  EncodeListReply(0, 1, nil)[:ListHeaderLen-4],
	}
	for name, b := range bad {
		if _, _, err := ReadListReply(bytes.NewReader(b), func([]byte) error { return nil }); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
