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

// block returns Server 1's current block at slot key k: changed in this access, stored,
// or nil when never written (rerandomizeAll makes nil a fresh encryption of zeros, so an
// empty slot costs one encryption, not an encryption and a rerandomization).
func (p *Party) block(k uint64) ([]byte, error) {
	if b, ok := p.dirty[k]; ok {
		return b, nil
	}
	return p.store.Block(k)
}

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
	errs := make([]error, len(blocks))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if blocks[i] == nil {
					out[i], errs[i] = p.zeroBlock()
				} else {
					out[i], errs[i] = p.rerandomize(blocks[i])
				}
			}
		}()
	}
	for i := range blocks {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}

// fetch runs SS-DOT over the stash, the path to leaf and a dummy block of zeros, then the
// two-party decryption. It returns, on Server 1, the fetched block as Server 2 sends it
// back rerandomized (for the insert), and on both this server's message for the client.
func (p *Party) fetch(leaf uint64, idx []bool) (fetched, toClient []byte, err error) {
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
		rr, err := p.rerandomize(blk)
		if err != nil {
			return nil, nil, err
		}
		if err := p.sess.SendMessage(toS1); err != nil {
			return nil, nil, err
		}
		return nil, toClient, p.sess.SendMessage(rr)
	}
	var blocks [][]byte
	for _, k := range pathKeys(p.st.P, leaf) {
		b, err := p.block(k)
		if err != nil {
			return nil, nil, err
		}
		blocks = append(blocks, b)
	}
	// The last block is the dummy: a fresh encryption of zeros.
	if blocks, err = p.rerandomizeAll(append(blocks, nil)); err != nil {
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
// positions back (Server 1).
func (p *Party) permuteRegion(r region, half []int, fetched, user []byte) error {
	var keys []uint64
	var arr [][]byte
	if p.garbler() {
		keys = r.keys()
		for _, k := range keys {
			b, err := p.block(k)
			if err != nil {
				return err
			}
			arr = append(arr, b)
		}
		arr = append(arr, fetched, user)
	}
	out, err := p.permute(arr, half, r.size(), r.kept())
	for j := 0; err == nil && j < len(keys); j++ {
		p.dirty[keys[j]] = out[j]
	}
	return err
}
