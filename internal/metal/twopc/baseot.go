package twopc

import (
	"bufio"
	"fmt"
	"io"

	"github.com/cloudflare/circl/group"
	"github.com/cloudflare/circl/ot/simot"
)

// Base OTs: 128 instances of Simplest OT (Chou-Orlandi) over ristretto255 from
// github.com/cloudflare/circl/ot/simot, run once per session. The IKNP receiver (party 2,
// the evaluator) is the base-OT sender of 16-byte seed pairs; the IKNP sender (party 1,
// the garbler) chooses with the bits of Delta. Messages (docs/formats/metal-2pc.md):
//
//	2 -> 1: A_i      128 x 32-byte ristretto255 elements
//	1 -> 2: B_i      128 x 32 bytes
//	2 -> 1: e0_i e1_i 128 x (44 + 44) bytes (circl's AES-GCM encryptions of the seeds)

const (
	elemLen = 32
	encLen  = 12 + 16 + 16 // GCM nonce, 16-byte seed, tag
)

var otGroup = group.Ristretto255

func baseOTSend(rw *bufio.ReadWriter, rnd io.Reader) (*cotReceiver, error) {
	var snd [kappa]simot.Sender
	r := &cotReceiver{}
	for i := range snd {
		var k0, k1 [16]byte
		if _, err := io.ReadFull(rnd, k0[:]); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(rnd, k1[:]); err != nil {
			return nil, err
		}
		r.g0[i], r.g1[i] = newPRG(k0[:]), newPRG(k1[:])
		a := snd[i].InitSender(otGroup, k0[:], k1[:], i)
		if err := writeElem(rw, a); err != nil {
			return nil, err
		}
	}
	if err := rw.Flush(); err != nil {
		return nil, err
	}
	for i := range snd {
		b, err := readElem(rw)
		if err != nil {
			return nil, fmt.Errorf("twopc: base OT %d: %w", i, err)
		}
		e0, e1 := snd[i].Round2Sender(b)
		if len(e0) != encLen || len(e1) != encLen {
			return nil, fmt.Errorf("twopc: base OT %d: unexpected ciphertext size", i)
		}
		rw.Write(e0)
		rw.Write(e1)
	}
	return r, rw.Flush()
}

func baseOTReceive(rw *bufio.ReadWriter, delta Label) (*cotSender, error) {
	var rcv [kappa]simot.Receiver
	s := &cotSender{delta: delta}
	for i := range rcv {
		a, err := readElem(rw)
		if err != nil {
			return nil, fmt.Errorf("twopc: base OT %d: %w", i, err)
		}
		if err := writeElem(rw, rcv[i].Round1Receiver(otGroup, choice(delta, i), i, a)); err != nil {
			return nil, err
		}
	}
	if err := rw.Flush(); err != nil {
		return nil, err
	}
	var e [2 * encLen]byte
	for i := range rcv {
		if _, err := io.ReadFull(rw, e[:]); err != nil {
			return nil, fmt.Errorf("twopc: base OT %d: %w", i, err)
		}
		if err := rcv[i].Round3Receiver(e[:encLen], e[encLen:], choice(delta, i)); err != nil {
			return nil, fmt.Errorf("twopc: base OT %d: %w", i, err)
		}
		seed := rcv[i].Returnmc()
		if len(seed) != 16 {
			return nil, fmt.Errorf("twopc: base OT %d: seed of %d bytes", i, len(seed))
		}
		s.g[i] = newPRG(seed)
	}
	return s, nil
}

func choice(delta Label, i int) int {
	if bit(delta, i) {
		return 1
	}
	return 0
}

func writeElem(w io.Writer, e group.Element) error {
	p, err := e.MarshalBinaryCompress()
	if err != nil {
		return err
	}
	if len(p) != elemLen {
		return fmt.Errorf("twopc: group element of %d bytes", len(p))
	}
	_, err = w.Write(p)
	return err
}

func readElem(r io.Reader) (group.Element, error) {
	var p [elemLen]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return nil, err
	}
	e := otGroup.NewElement()
	if err := e.UnmarshalBinary(p[:]); err != nil {
		return nil, fmt.Errorf("invalid ristretto255 element")
	}
	return e, nil
}
