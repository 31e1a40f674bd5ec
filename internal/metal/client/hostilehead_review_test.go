package client

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/veil-project/veil/internal/metal/segment"
)

// A head segment is data another user can write (anyone holding a write capability for the
// id, e.g. one received through Metal-SHARE). One that claims the largest file its header
// allows (2^32-1 segments, with the matching length) must be refused with an error after
// the accesses it takes, not crash the reader by allocating for that length up front.
func TestReadHostileHeadDoesNotCrash(t *testing.T) {
	const bs = 1 << 20 // the largest block a deployment allows
	head := make([]byte, bs)
	head[0] = segment.Version
	count := uint64(1<<32 - 1)
	binary.LittleEndian.PutUint32(head[1+segment.NonceLen+4:], uint32(count))
	binary.LittleEndian.PutUint64(head[1+segment.NonceLen+8:], count*uint64(segment.Payload(bs)))
	copy(head[segment.HeaderLen:], "x")
	// The rest of segment 0's payload is content: fill it so Parse accepts the head.
	for i := segment.HeaderLen; i < bs; i++ {
		head[i] = 'x'
	}
	if _, err := segment.Parse(head); err != nil {
		t.Fatalf("the head must pass Parse on its own: %v", err)
	}
	m := &memBlocks{bs: bs, data: map[uint64][]byte{10: head}}
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("reading a file whose head claims %d segments panicked: %v", count, r)
			}
		}()
		_, _, err = readFile(context.Background(), m, caps(0, 63), 10, FileOptions{})
	}()
	if err == nil {
		t.Fatal("a head claiming 2^32-1 segments over 54 capabilities was read without error")
	}
	t.Log(err)
}
