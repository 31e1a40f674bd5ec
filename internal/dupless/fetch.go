package dupless

import (
	"context"
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/mle"
)

// fetchChunks downloads and verifies a file's chunks, a few at a time, writing them in order.
func (c *Client) fetchChunks(ctx context.Context, r *record, w io.Writer) error {
	release, err := c.transfer(ctx, int64(r.Size))
	if err != nil {
		return err
	}
	defer release()
	const ahead = 4
	type result struct {
		data []byte
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan result, len(r.Chunks))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	sem := make(chan struct{}, ahead)
	go func() {
		for i := range r.Chunks {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func(i int) {
				data, err := c.fetchChunk(ctx, &r.Chunks[i])
				if err != nil {
					err = fmt.Errorf("chunk %d of %d: %w", i+1, len(r.Chunks), err)
				}
				results[i] <- result{data, err}
			}(i)
		}
	}()
	for i := range r.Chunks {
		var res result
		select {
		case res = <-results[i]:
		case <-ctx.Done(): // the dispatcher stops launching; do not wait for what it never sent
			return ctx.Err()
		}
		<-sem
		if res.err != nil {
			return res.err
		}
		if _, err := w.Write(res.data); err != nil {
			return err
		}
		c.bytesDone(int64(len(res.data)))
	}
	return nil
}

func (c *Client) fetchChunk(ctx context.Context, ref *chunkRef) ([]byte, error) {
	dir, name := chunkLocation(ref.Tag)
	rc, err := c.be.Get(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	limit := int64(ref.MsgLen) + 2*mle.Size + mle.HeaderSize + 1
	ct, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return nil, err
	}
	// The tag names the object and must match; guarded decryption below then checks the
	// plaintext against the recorded H(M), so a swapped or altered body is caught too.
	if tag, err := mle.TagGen(ct); err != nil {
		return nil, fmt.Errorf("%w: ciphertext does not match its key record (tampered, swapped or truncated): %w", ErrIntegrity, err)
	} else if tag != ref.Tag {
		return nil, fmt.Errorf("%w: ciphertext does not match its key record (tampered, swapped or truncated)", ErrIntegrity)
	}
	msg, err := decryptChunk(ref, ct)
	if err != nil {
		return nil, err
	}
	if len(msg) != int(ref.MsgLen) {
		return nil, fmt.Errorf("%w: message length %d, record says %d", ErrIntegrity, len(msg), ref.MsgLen)
	}
	data, err := unpack(ref, msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIntegrity, err)
	}
	if len(data) != int(ref.PlainLen) {
		return nil, fmt.Errorf("%w: chunk length %d, record says %d", ErrIntegrity, len(data), ref.PlainLen)
	}
	return data, nil
}

// decryptChunk checks that the ciphertext's header is the suite and scheme its record names
// (version 2 records; a version 1 record names none, and then only guarded schemes are
// accepted) before any byte is decrypted, then decrypts with the guard H(M) = recorded.
func decryptChunk(ref *chunkRef, ct []byte) ([]byte, error) {
	suite, scheme := ref.Suite, ref.Scheme
	if scheme == 0 { // version 1 record
		s, sc, err := mle.Parse(ct)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrIntegrity, err)
		}
		if !knownFormat(s, sc) {
			return nil, fmt.Errorf("%w: chunk header names %v/%v, which veil never writes", ErrIntegrity, s, sc)
		}
		suite, scheme = s, sc
	}
	msg, err := mle.DecAs(ref.Key, ct, suite, scheme, mle.GuardDigest(ref.Digest))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIntegrity, err)
	}
	return msg, nil
}
