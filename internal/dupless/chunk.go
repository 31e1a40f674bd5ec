package dupless

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	cdc "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc" // registers fastcdc-v1.0.0
	"github.com/veil-project/veil/internal/mle"
)

// Content-defined chunking: FastCDC (Xia et al., USENIX ATC 2016) as the maintained
// github.com/PlakarKorp/go-cdc-chunkers implements it, in its pinned "fastcdc-v1.0.0"
// variant (the spec's gear table and normalized chunking; the version is in the name, so
// a library update cannot silently move boundaries). Every veil user must cut identical
// content at identical places, or nothing would deduplicate across users, so the gear
// table is the public one (restic draws a Rabin polynomial per repository instead, which
// hides chunk boundaries but only dedups within a repository). The cost is written in
// docs/security.md: chunk lengths are a fingerprint of known content. FastCDC chunks at
// about twice the speed of restic/chunker's Rabin fingerprint here (docs/benchmarks.md).
const chunkAlgorithm = "fastcdc-v1.0.0"

// Chunk sizes: files below MinChunk are one chunk (exactly the paper's one object per file).
const (
	MinChunk  = 512 << 10
	NormChunk = 1 << 20
	MaxChunk  = 8 << 20
)

// prepareAll runs preparePiece on every chunk, on all cores, keeping the order.
func prepareAll(mleFor func(int) *mle.MLE, chunks [][]byte, compress bool) []piece {
	ps := make([]piece, len(chunks))
	parallel(len(chunks), func(i int) { ps[i] = preparePiece(mleFor, chunks[i], compress) })
	return ps
}

// parallel calls f(0..n-1) on up to GOMAXPROCS goroutines and waits.
func parallel(n int, f func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// unpack reverses preparePiece for a decrypted MLE message.
func unpack(c *chunkRef, msg []byte) ([]byte, error) {
	if c.Flags&flagCompressed == 0 {
		return msg, nil
	}
	out, err := zdec.DecodeAll(msg, make([]byte, 0, c.PlainLen))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return out, nil
}

// splitter cuts a stream into content-defined chunks in a goroutine of its own, a few
// chunks ahead of the caller, so reading and chunking overlap with the rest of the work.
type splitter struct {
	ch   chan chunkOrErr
	stop chan struct{}
	done chan struct{}
}

type chunkOrErr struct {
	data []byte
	err  error
}

// scanBufs are the chunkers' scan buffers, reused across files: allocating (and zeroing)
// one per file made storing many small files memory-bound.
var (
	scanBufs = sync.Pool{New: func() any { b := make([]byte, 2*MaxChunk); return &b }} // pointers: no allocation per Put
	headBufs = sync.Pool{New: func() any { b := make([]byte, MinChunk); return &b }}
)

func newSplitter(r io.Reader) *splitter {
	s := &splitter{ch: make(chan chunkOrErr, 4), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// A file under MinChunk is one chunk: read it whole, no chunker needed.
		headp := headBufs.Get().(*[]byte)
		defer headBufs.Put(headp)
		head := *headp
		n, err := io.ReadFull(r, head)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if n > 0 && !s.send(chunkOrErr{data: withRoom(head[:n])}) {
				return
			}
			s.send(chunkOrErr{err: io.EOF})
			return
		}
		if err != nil {
			s.send(chunkOrErr{err: err})
			return
		}
		bufp := scanBufs.Get().(*[]byte)
		defer scanBufs.Put(bufp)
		buf := *bufp
		c, err := cdc.NewChunkerBuffer(gearAlgorithm, io.MultiReader(bytes.NewReader(head), r),
			&cdc.ChunkerOpts{MinSize: MinChunk, NormalSize: NormChunk, MaxSize: MaxChunk}, buf)
		for err == nil {
			var ch []byte
			ch, err = c.Next()
			if len(ch) > 0 {
				if !s.send(chunkOrErr{data: withRoom(ch)}) {
					return
				}
			}
		}
		s.send(chunkOrErr{err: err}) // io.EOF after the last chunk
	}()
	return s
}

func (s *splitter) send(c chunkOrErr) bool {
	select {
	case s.ch <- c:
		return true
	case <-s.stop:
		return false
	}
}

// next returns the next chunk, or io.EOF after the last one. The chunk is the caller's,
// and so are mle.HeaderSize bytes before it in the same array (room, for encryption in
// place: nextWithRoom).
func (s *splitter) next() ([]byte, error) {
	room, err := s.nextWithRoom()
	if room == nil {
		return nil, err
	}
	return room[mle.HeaderSize:], err
}

// nextWithRoom is next, returning the chunk with its room: mle.HeaderSize bytes, then the
// chunk (and the array's spare capacity after it).
func (s *splitter) nextWithRoom() ([]byte, error) {
	item := <-s.ch
	return item.data, item.err
}

// withRoom copies a chunk out of the chunker's buffer after mle.HeaderSize bytes of room,
// so that its ciphertext can take the same array (the header before it, a trailer in the
// spare capacity that allocation rounding usually leaves): one 64 MiB file allocates 64
// MiB for its chunks, not 128. append copies without zeroing the array first.
func withRoom(chunk []byte) []byte {
	var head [mle.HeaderSize]byte
	return append(head[:], chunk...)
}

// close stops the chunking goroutine and waits for it (it may still read the file).
func (s *splitter) close() {
	close(s.stop)
	<-s.done
}
