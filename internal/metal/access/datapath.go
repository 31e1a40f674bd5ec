package access

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/veil-project/veil/internal/metal/dataoram"
	"github.com/veil-project/veil/internal/metal/elgamal"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// DataORAM's side of an access, outside 2PC. Server 1 holds the blocks; Server 2 sees only
// the block it fetches (Section 5.4) and freshly rerandomized, permuted arrays (5.5).

func (p *Party) garbler() bool { return p.sess.Role() == twopc.Garbler }

// zeroBlock is a fresh encryption of the block of zeros: what a never-written DataORAM
// slot (stored as nil) and the fetch's dummy become (one encryption, not an encryption
// and a rerandomization).
func (p *Party) zeroBlock() ([]byte, error) {
	cts, err := p.pk.EncryptBlock(make([]byte, p.st.P.BlockSize), p.rnd)
	if err != nil {
		return nil, err
	}
	return dataoram.MarshalBlock(cts), nil
}

// rerandomize adds a fresh encryption of zero to every ciphertext of a block (one scalar
// per ciphertext: a scalar shared by several would let the other server link them).
func (p *Party) rerandomize(blk []byte) ([]byte, error) {
	cts, err := dataoram.UnmarshalBlock(blk)
	if err != nil {
		return nil, err
	}
	if len(cts) != p.st.P.Chunks() {
		return nil, fmt.Errorf("access: block of %d ciphertexts, want %d", len(cts), p.st.P.Chunks())
	}
	for i := range cts {
		s, err := elgamal.RandomScalar(p.rnd)
		if err != nil {
			return nil, err
		}
		cts[i] = p.pk.Rerandomize(cts[i], s)
	}
	return dataoram.MarshalBlock(cts), nil
}

// rerandomizeAll rerandomizes blocks on all CPUs (the ElGamal work dominates an access);
// a nil block (a slot never written) becomes a fresh encryption of zeros.
func (p *Party) rerandomizeAll(blocks [][]byte) ([][]byte, error) {
	out := make([][]byte, len(blocks))
	err := forEach(len(blocks), func(i int) (err error) {
		if blocks[i] == nil {
			out[i], err = p.zeroBlock()
		} else {
			out[i], err = p.rerandomize(blocks[i])
		}
		return err
	})
	return out, err
}

// applyPairs rerandomizes a block with precomputed rerandomizers, one per ciphertext.
func (p *Party) applyPairs(blk []byte, rr []elgamal.Rerandomizer) ([]byte, error) {
	cts, err := dataoram.UnmarshalBlock(blk)
	if err != nil {
		return nil, err
	}
	if len(cts) != len(rr) {
		return nil, fmt.Errorf("access: block of %d ciphertexts, want %d", len(cts), len(rr))
	}
	for i := range cts {
		cts[i] = rr[i].Apply(cts[i])
	}
	return dataoram.MarshalBlock(cts), nil
}

// forEach runs f(0), ..., f(n-1) on all CPUs and joins their errors.
func forEach(n int, f func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(n, runtime.GOMAXPROCS(0)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// fetch runs SS-DOT over the stash, the path to leaf and a dummy block of zeros, then the
// two-party decryption. It returns, on Server 1, the fetched block as Server 2 sends it
// back rerandomized (for the insert), and on both this server's message for the client.
func (p *Party) fetch(idx []bool) (fetched, toClient []byte, err error) {
	if !p.garbler() {
		blk, err := p.dot.Receive(idx)
		if err != nil {
			return nil, nil, err
		}
		cts, err := dataoram.UnmarshalBlock(blk)
		if err != nil {
			return nil, nil, err
		}
		toS1, toClient, err := dataoram.DecryptServer2(p.st.Key, &p.st.PeerX, cts, p.rnd)
		if err != nil {
			return nil, nil, err
		}
		pairs, err := p.ahead.pairs.wait()
		if err != nil {
			return nil, nil, err
		}
		rr, err := p.applyPairs(blk, pairs[:p.st.P.Chunks()])
		if err != nil {
			return nil, nil, err
		}
		if err := p.sess.SendMessage(toS1); err != nil {
			return nil, nil, err
		}
		return nil, toClient, p.sess.SendMessage(rr)
	}
	blocks, err := p.ahead.path.wait()
	if err != nil {
		return nil, nil, err
	}
	if err := p.dot.Send(idx, blocks); err != nil {
		return nil, nil, err
	}
	msg, err := p.sess.ReceiveMessage()
	if err != nil {
		return nil, nil, err
	}
	if toClient, err = dataoram.DecryptServer1(p.st.Key, msg); err != nil {
		return nil, nil, err
	}
	if fetched, err = p.sess.ReceiveMessage(); err != nil {
		return nil, nil, err
	}
	if err := CheckUserBlock(p.st.P, fetched); err != nil {
		return nil, nil, fmt.Errorf("access: fetched block from Server 2: %w", err)
	}
	return fetched, toClient, nil
}

// permuteRegion applies the access's one permutation (Server 1's σ1, then Server 2's σ2)
// to the region's blocks, the fetched block and the client's, and writes the kept
// positions back (Server 1). The region's blocks and the client's were rerandomized
// ahead (aheadWork); the fetched block is rerandomized here.
func (p *Party) permuteRegion(r region, half []int, fetched []byte) error {
	var arr [][]byte
	if p.garbler() {
		var err error
		if arr, err = p.ahead.region.wait(); err != nil {
			return err
		}
		f, err := p.rerandomize(fetched)
		if err != nil {
			return err
		}
		arr = append(append(arr[:r.kept():r.kept()], f), arr[r.kept()])
	}
	out, err := p.permute(arr, half, r.size(), r.kept())
	if err != nil || !p.garbler() {
		return err
	}
	for j, k := range r.keys() {
		p.dirty[k] = out[j]
	}
	return nil
}
