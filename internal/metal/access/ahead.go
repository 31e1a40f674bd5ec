package access

import (
	"github.com/veil-project/veil/internal/metal/elgamal"
)

// DataORAM work of one access that needs no 2PC output runs beside the Runs instead of
// after them (the Runs leave CPU idle: one party garbles while the other waits, and
// both wait on the link). Nothing here is precomputed across accesses: every scalar is
// drawn during the access that uses it, one per ciphertext.
//
//   - Server 1, at once: the region of the access's permutation (stash and both eviction
//     paths: the eviction leaves follow from the public eviction counter) and the client's
//     block, rerandomized;
//   - Server 1, once the front Run reveals the leaf: stash + path + dummy for SS-DOT,
//     rerandomized;
//   - Server 2, at once: the rerandomizers (sG, sP) for the fetched block and the blocks
//     it keeps in the permutation.

// future is a value computed by a goroutine.
type future[T any] struct {
	done chan struct{}
	v    T
	err  error
}

func goFuture[T any](f func() (T, error)) *future[T] {
	fu := &future[T]{done: make(chan struct{})}
	go func() {
		defer close(fu.done)
		fu.v, fu.err = f()
	}()
	return fu
}

func (f *future[T]) wait() (T, error) {
	<-f.done
	return f.v, f.err
}

// aheadWork is one access's work started early; its futures are nil until started.
type aheadWork struct {
	region, path *future[[][]byte]               // Server 1
	pairs        *future[[]elgamal.Rerandomizer] // Server 2
}

// startAhead starts the work that needs only the region (and the client's block).
func (p *Party) startAhead(r region, user []byte) {
	p.ahead = aheadWork{}
	if !p.garbler() {
		n := (r.kept() + 1) * p.st.P.Chunks()
		p.ahead.pairs = goFuture(func() ([]elgamal.Rerandomizer, error) {
			out := make([]elgamal.Rerandomizer, n)
			const batch = 256
			err := forEach((n+batch-1)/batch, func(i int) error {
				return p.pk.Rerandomizers(out[i*batch:min(n, (i+1)*batch)], p.rnd)
			})
			return out, err
		})
		return
	}
	keys := r.keys()
	p.ahead.region = goFuture(func() ([][]byte, error) {
		blocks, err := p.storedBlocks(keys)
		if err != nil {
			return nil, err
		}
		return p.rerandomizeAll(append(blocks, user))
	})
}

// startPath starts Server 1's rerandomization of the fetch's stash + path + dummy.
func (p *Party) startPath(leaf uint64) {
	if !p.garbler() {
		return
	}
	keys := pathKeys(p.st.P, leaf)
	p.ahead.path = goFuture(func() ([][]byte, error) {
		blocks, err := p.storedBlocks(keys)
		if err != nil {
			return nil, err
		}
		// The last block is the dummy: a fresh encryption of zeros.
		return p.rerandomizeAll(append(blocks, nil))
	})
}

// storedBlocks reads committed DataORAM slots (nil: never written). The access changes
// none before its permutation, which waits for this work.
func (p *Party) storedBlocks(keys []uint64) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		b, err := p.store.Block(k)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// waitAhead lets every started goroutine finish (also after an error), so none outlives
// the access.
func (p *Party) waitAhead() {
	for _, f := range []*future[[][]byte]{p.ahead.region, p.ahead.path} {
		if f != nil {
			f.wait()
		}
	}
	if p.ahead.pairs != nil {
		p.ahead.pairs.wait()
	}
}
