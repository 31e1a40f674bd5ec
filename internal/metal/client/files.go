package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/segment"
)

// blocks is what a segmented file needs from a deployment: whole-block accesses. *Client
// is one; the tests also run the file logic over an in-memory one that fails on demand.
type blocks interface {
	BlockSize() int
	Read(ctx context.Context, capability []byte, id uint64) ([]byte, error)
	Write(ctx context.Context, capability []byte, id uint64, block []byte) error
}

// BlockSize is the deployment's block size: every access reads or writes this many bytes.
func (c *Client) BlockSize() int { return c.p.BlockSize }

// CapabilityFunc returns the capability that covers file id (Profile.CapabilityFor).
type CapabilityFunc func(id uint64) ([]byte, error)

// FileOptions tune WriteFile and ReadFile.
type FileOptions struct {
	// Pad makes every write and read of the file exactly Pad accesses (the extra ones
	// read the file's head), so the servers do not learn its size in blocks; 0 does one
	// access per segment. A file of more than Pad segments is refused.
	Pad int
	// Progress, if set, is called after each access with the number done and the total.
	Progress func(done, total int)
}

// Span is where a file lies: Segments consecutive file ids from First.
type Span struct {
	First    uint64 `json:"first"`
	Segments uint32 `json:"segments"`
	Size     uint64 `json:"size"`
}

// Last is the span's last file id.
func (s Span) Last() uint64 { return s.First + uint64(s.Segments) - 1 }

// SpanOf is where a file of size bytes written at first would lie.
func (c *Client) SpanOf(first uint64, size int) (Span, error) {
	return spanOf(c.p.BlockSize, first, size)
}

func spanOf(blockSize int, first uint64, size int) (Span, error) {
	n, err := segment.Count(uint64(size), blockSize)
	if err != nil {
		return Span{}, err
	}
	if n > 1<<32-1 || first+n-1 < first {
		return Span{}, fmt.Errorf("a file of %d bytes at file id %d does not fit the file ids", size, first)
	}
	return Span{First: first, Segments: uint32(n), Size: uint64(size)}, nil
}

// WriteFile stores data over consecutive file ids from first, one block per segment
// (docs/formats/metal-segment.md): the segments after the head first, the head last.
func (c *Client) WriteFile(ctx context.Context, caps CapabilityFunc, first uint64, data []byte, o FileOptions) (Span, error) {
	return writeFile(ctx, c, caps, first, data, o)
}

// ReadFile reads the file whose head is at first, checking every segment belongs to the
// head's write. A never-written id is an error wrapping segment.ErrEmpty (an empty file
// written there reads as empty).
func (c *Client) ReadFile(ctx context.Context, caps CapabilityFunc, first uint64, o FileOptions) ([]byte, Span, error) {
	return readFile(ctx, c, caps, first, o)
}

func writeFile(ctx context.Context, b blocks, caps CapabilityFunc, first uint64, data []byte, o FileOptions) (Span, error) {
	s, err := spanOf(b.BlockSize(), first, len(data))
	if err != nil {
		return s, err
	}
	total, err := accesses(int(s.Segments), o.Pad)
	if err != nil {
		return s, err
	}
	capsOf, err := capabilities(caps, s)
	if err != nil {
		return s, err
	}
	var nonce [segment.NonceLen]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return s, err
	}
	segs, err := segment.Split(data, b.BlockSize(), nonce)
	if err != nil {
		return s, err
	}
	n := len(segs)
	for k := range n { // segments 1..n-1, then the head
		i := (k + 1) % n
		if err := b.Write(ctx, capsOf[i], first+uint64(i), segs[i]); err != nil {
			return s, padFailed(ctx, b, capsOf[0], first, k+1, total, o, writeErr(s, k, i, err))
		}
		progress(o, k+1, total)
	}
	return s, pad(ctx, b, capsOf[0], first, n, total, o)
}

// writeErr says how far an interrupted write got and what it left.
func writeErr(s Span, done, i int, err error) error {
	err = accessErr(s.First+uint64(i), err)
	if done == 0 {
		return fmt.Errorf("%w (nothing written)", err)
	}
	return fmt.Errorf("%w: write interrupted after %d of %d segments; the file at id %d may now read as inconsistent until written again", err, done, s.Segments, s.First)
}

func accessErr(id uint64, err error) error {
	if errors.Is(err, access.ErrRefused) {
		return fmt.Errorf("file id %d: refused by the servers' capability check", id)
	}
	return fmt.Errorf("file id %d: %w", id, err)
}

func readFile(ctx context.Context, b blocks, caps CapabilityFunc, first uint64, o FileOptions) ([]byte, Span, error) {
	s := Span{First: first, Segments: 1}
	c0, err := caps(first)
	if err != nil {
		return nil, s, err
	}
	total, err := accesses(1, o.Pad)
	if err != nil {
		return nil, s, err
	}
	// From the head's access on, a failure (a refusal, a malformed or foreign file) still
	// makes the read total accesses when padded: the servers must not learn it from the count.
	fail := func(done int, err error) ([]byte, Span, error) {
		return nil, s, padFailed(ctx, b, c0, first, done, total, o, err)
	}
	head, err := b.Read(ctx, c0, first)
	if err != nil {
		return fail(1, accessErr(first, err))
	}
	j, err := segment.NewJoiner(head)
	var nh *segment.NotHeadError
	switch {
	case errors.Is(err, segment.ErrEmpty):
		// A slot never written decrypts to zeros, and every write puts a version 1 header
		// in each segment (an empty file included), so this is no file, not an empty one.
		// Told here, after the access, from what only the client decrypted: the servers
		// see the one access any read of a one-segment file makes (total, when padded).
		return fail(1, fmt.Errorf("file id %d: %w: no file starts there ('veil metal ls' lists the files written from this profile)", first, err))
	case errors.As(err, &nh):
		return fail(1, fmt.Errorf("file id %d is not the start of a file: it holds segment %d of %d of the file at id %d", first, nh.Index+1, nh.Count, first-uint64(nh.Index)))
	case err != nil:
		return fail(1, fmt.Errorf("file id %d: %w", first, err))
	}
	h := j.Head()
	s.Segments, s.Size = h.Count, h.Length
	if first+uint64(h.Count)-1 < first {
		return fail(1, fmt.Errorf("file id %d: a head of %d segments runs past the last file id", first, h.Count))
	}
	n, err := accesses(int(h.Count), o.Pad)
	if err != nil {
		return fail(1, err)
	}
	total = n
	capsOf, err := capabilities(caps, s)
	if err != nil {
		return fail(1, err)
	}
	progress(o, 1, total)
	for i := 1; i < int(h.Count); i++ {
		id := first + uint64(i)
		blk, err := b.Read(ctx, capsOf[i], id)
		if err != nil {
			return fail(i+1, accessErr(id, err))
		}
		if err := j.Add(blk); err != nil {
			return fail(i+1, fmt.Errorf("file id %d: %w (an interrupted or overlapping write: write the file at id %d again)", id, err, first))
		}
		progress(o, i+1, total)
	}
	data, err := j.Bytes()
	if err != nil {
		return fail(int(h.Count), err)
	}
	return data, s, pad(ctx, b, c0, first, int(h.Count), total, o)
}

// accesses is the number of accesses for a file of n segments under o.Pad.
func accesses(n, padTo int) (int, error) {
	if padTo < 0 {
		return 0, fmt.Errorf("--pad %d: give a number of accesses, or 0 for one per segment", padTo)
	}
	if padTo > 0 && n > padTo {
		return 0, fmt.Errorf("the file takes %d accesses, more than --pad %d", n, padTo)
	}
	return max(n, padTo), nil
}

// capabilities finds a capability for every id of s before any access is made.
func capabilities(caps CapabilityFunc, s Span) ([][]byte, error) {
	// s.Segments may come from a head another user wrote: allocate as capabilities are
	// found (the first id without one ends the loop), not for the count it claims.
	out := make([][]byte, 0, min(s.Segments, 1024))
	for i := uint32(0); i < s.Segments; i++ {
		c, err := caps(s.First + uint64(i))
		if err != nil {
			if s.Segments > 1 {
				return nil, fmt.Errorf("the file needs file ids %d..%d: %w", s.First, s.Last(), err)
			}
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// pad makes the accesses done so far (done) up to total with reads of the head.
func pad(ctx context.Context, b blocks, capability []byte, first uint64, done, total int, o FileOptions) error {
	for k := done; k < total; k++ {
		if _, err := b.Read(ctx, capability, first); err != nil {
			return fmt.Errorf("padding access %d of %d: %w", k+1, total, accessErr(first, err))
		}
		progress(o, k+1, total)
	}
	return nil
}

// padFailed ends a padded operation that failed after done accesses with err: it makes
// the accesses up to total (reads of the head, their answers ignored) so that the servers
// see the count --pad promised whatever the verdicts and the content were, then returns
// err. It stops early only at an error other than a refusal (the servers unreachable).
// Without --pad the count already follows the file's size and nothing is added.
func padFailed(ctx context.Context, b blocks, capability []byte, first uint64, done, total int, o FileOptions, err error) error {
	if o.Pad <= 0 {
		return err
	}
	for k := done; k < total; k++ {
		if _, e := b.Read(ctx, capability, first); e != nil && !errors.Is(e, access.ErrRefused) {
			break
		}
		progress(o, k+1, total)
	}
	return err
}

func progress(o FileOptions, done, total int) {
	if o.Progress != nil {
		o.Progress(done, total)
	}
}
