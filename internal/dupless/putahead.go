package dupless

import (
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/mle"
)

// batchBytes bounds the chunk data of one batch: what a file keeps in memory while its
// keys are derived (two batches: the one being stored and the one read ahead).
const batchBytes = 8 << 20

// prepared is one batch read and prepared ahead (chunked, compressed, hashed), or the
// error that ended the file's reading.
type prepared struct {
	pieces []piece
	eof    bool
	err    error
}

// storeChunks reads the file in batches of up to batchBytes and stores each; the record
// collects their references. The steps overlap across batches, so that for a large file
// the key server round trip and the encryption are not on the chunker's path: while batch
// i is encrypted and sent (finish), batch i+1's keys are being derived (begin) and batch
// i+2 is chunked, compressed and hashed (readAhead). A batch is begun as soon as it is
// hashed and finished as soon as its keys are there, whichever comes first, with up to two
// begun. When batch i+1 is sorted and claimed before batch i is sent, a chunk of both is
// batch i's, derived and sent once, and batch i+1 reuses it once batch i has stored it
// (putBatch.sendLater).
func (fp *filePut) storeChunks() error {
	sp := newSplitter(fp.f)
	ahead, stop, done := make(chan prepared, 1), make(chan struct{}), make(chan struct{})
	go fp.readAhead(sp, ahead, stop, done)
	var begun []*putBatch // in order: their keys are being derived
	defer func() {
		close(stop)
		<-done // readAhead no longer reads sp
		sp.close()
		for _, b := range begun {
			<-b.derived // no derivation of this file outlives it
		}
	}()
	queued, eof := 0, false // chunks begun, not yet in the record
	for !eof || len(begun) > 0 {
		in, keys := ahead, (<-chan struct{})(nil)
		if eof || len(begun) == 2 {
			in = nil
		}
		if len(begun) > 0 {
			keys = begun[0].derived
		}
		select {
		case p := <-in:
			if p.err != nil {
				return p.err
			}
			if len(fp.rec.Chunks)+queued+len(p.pieces) > maxRecordChunks {
				return fmt.Errorf("file too large: more than %d chunks", maxRecordChunks)
			}
			b := fp.newBatch(p.pieces)
			b.begin(len(begun) > 0 || !p.eof) // a file of one batch has nothing to overlap
			begun, queued, eof = append(begun, b), queued+len(p.pieces), p.eof
		case <-keys:
			b := begun[0]
			begun, queued = begun[1:], queued-len(b.pieces)
			if err := b.finish(); err != nil {
				return err
			}
		case <-fp.ctx.Done():
			return fp.ctx.Err()
		}
	}
	return nil
}

// readAhead prepares the file's batches in order and hands them over through ahead, one
// ahead of the batch being stored, until the file ends, reading fails, or stop is closed.
func (fp *filePut) readAhead(sp *splitter, ahead chan<- prepared, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		t := fp.c.timer("chunk")
		rooms, eof, err := fp.readBatch(sp, stop)
		p := prepared{eof: eof, err: err}
		if err == nil {
			raw := make([][]byte, len(rooms))
			for i, r := range rooms {
				raw[i] = r[mle.HeaderSize:]
			}
			p.pieces = prepareAll(fp.c.mleFor, raw, !fp.c.opts.NoCompress)
			for i := range p.pieces {
				if p.pieces[i].flags&flagCompressed == 0 { // its message is the chunk itself
					p.pieces[i].room = rooms[i]
				}
			}
		}
		t()
		select {
		case ahead <- p:
		case <-stop:
			return
		}
		if eof || err != nil {
			return
		}
	}
}

// errStopped ends readBatch when the batch would not be used (the file failed).
var errStopped = fmt.Errorf("stopped")

// readBatch takes chunks from sp until they hold batchBytes, or the file ends (eof); each
// comes with its room (splitter.nextWithRoom).
func (fp *filePut) readBatch(sp *splitter, stop <-chan struct{}) (rooms [][]byte, eof bool, err error) {
	for size := 0; size < batchBytes; {
		select {
		case <-stop:
			return nil, false, errStopped
		default:
		}
		room, err := sp.nextWithRoom()
		if err == io.EOF {
			return rooms, true, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read: %w", err)
		}
		rooms = append(rooms, room)
		n := len(room) - mle.HeaderSize
		size += n
		fp.c.putBytes(fp.sum, int64(n))
	}
	return rooms, false, nil
}
