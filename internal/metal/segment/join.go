package segment

import (
	"errors"
	"fmt"
)

// maxReserve bounds what NewJoiner allocates up front for the file the head announces.
const maxReserve = 64 << 20

// ErrMixed reports segments of one file that do not belong to the same write.
var ErrMixed = errors.New("segments of different writes")

// Joiner reassembles a file from its segments in order, refusing any segment that is not
// the next one of the same write as the head.
type Joiner struct {
	head Header
	next uint32
	data []byte
}

// NewJoiner starts from the head segment (index 0). ErrEmpty passes through (a never
// written file); a non-head segment is refused with its index, so a caller can say where
// the file starts.
func NewJoiner(head []byte) (*Joiner, error) {
	h, err := Parse(head)
	if err != nil {
		return nil, err
	}
	if h.Index != 0 {
		return nil, &NotHeadError{Index: h.Index, Count: h.Count}
	}
	// h.Length is what the head claims (up to 2^32-1 segments' worth): data written by
	// whoever holds a write capability. Reserve a bounded amount; append grows the rest as
	// segments actually arrive.
	j := &Joiner{head: h, data: make([]byte, 0, min(h.Length, maxReserve))}
	return j, j.Add(head)
}

// NotHeadError is a segment read where a file's head was expected.
type NotHeadError struct{ Index, Count uint32 }

func (e *NotHeadError) Error() string {
	return fmt.Sprintf("it holds segment %d of %d of a file that starts %d ids earlier", e.Index+1, e.Count, e.Index)
}

// Head is the head segment's header.
func (j *Joiner) Head() Header { return j.head }

// Remaining is the number of segments still to add.
func (j *Joiner) Remaining() int { return int(j.head.Count - j.next) }

// Add appends the next segment, checking it belongs to the head's write.
func (j *Joiner) Add(block []byte) error {
	if j.next == j.head.Count {
		return errors.New("all segments already added")
	}
	h, err := Parse(block)
	switch {
	case errors.Is(err, ErrEmpty):
		return fmt.Errorf("%w: segment %d of %d was never written", ErrMixed, j.next+1, j.head.Count)
	case err != nil:
		return fmt.Errorf("segment %d of %d: %w", j.next+1, j.head.Count, err)
	case h.Nonce != j.head.Nonce || h.Count != j.head.Count || h.Length != j.head.Length:
		return fmt.Errorf("%w: segment %d of %d belongs to another write", ErrMixed, j.next+1, j.head.Count)
	case h.Index != j.next:
		return fmt.Errorf("%w: segment %d of %d holds index %d", ErrMixed, j.next+1, j.head.Count, h.Index)
	}
	j.data = append(j.data, Content(h, block)...)
	j.next++
	return nil
}

// Bytes returns the file once every segment is added.
func (j *Joiner) Bytes() ([]byte, error) {
	if j.next != j.head.Count {
		return nil, fmt.Errorf("%d of %d segments missing", j.head.Count-j.next, j.head.Count)
	}
	return j.data, nil
}
