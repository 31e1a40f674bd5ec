package dataoram

import (
	"bytes"
	"crypto/rand"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/elgamal"
	"github.com/veil-project/veil/internal/metal/twopc"
	"github.com/veil-project/veil/internal/metal/twopc/twopctest"
)

func sessions(t *testing.T) (*twopc.Session, *twopc.Session) { return twopctest.Pair(t) }

// Section 5.4 end to end over loopback TCP: Server 1 offers n rerandomized blocks, the index
// is XOR-shared, Server 2 obtains exactly block i, and the blinded two-party decryption
// gives the client block i's plaintext.
func TestFetchAndDecrypt(t *testing.T) {
	s1, s2 := sessions(t)
	k1, _ := elgamal.NewKeyShare(rand.Reader)
	k2, _ := elgamal.NewKeyShare(rand.Reader)
	pk := elgamal.JoinPublic(&k1.X, &k2.X)
	const n = 10
	plain := make([][]byte, n)
	stored := make([][]elgamal.Ciphertext, n)
	for j := range plain {
		plain[j] = make([]byte, 64)
		rand.Read(plain[j])
		var err error
		if stored[j], err = pk.EncryptBlock(plain[j], rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	d1, err := NewDOT(s1, n, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := NewDOT(s2, n, nil)
	r := mrand.New(mrand.NewPCG(5, 5))
	for _, i := range []int{0, 6, 9, 3} {
		// Server 1 rerandomizes what it offers with one scalar (footnote 1).
		sc, _ := elgamal.RandomScalar(rand.Reader)
		rz := pk.NewRerandomizer(sc)
		offered := make([][]byte, n)
		for j := range offered {
			var cts []elgamal.Ciphertext
			for _, ct := range stored[j] {
				cts = append(cts, rz.Apply(ct))
			}
			offered[j] = MarshalBlock(cts)
		}
		idx := circuit.Uint64ToBits(uint64(i), IndexBits(n))
		sh1 := make([]bool, len(idx))
		for k := range sh1 {
			sh1[k] = r.IntN(2) == 1
		}
		sh2 := make([]bool, len(idx))
		for k := range sh2 {
			sh2[k] = idx[k] != sh1[k]
		}
		done := make(chan error)
		go func() { done <- d1.Send(sh1, offered) }()
		got, err := d2.Receive(sh2)
		if err1 := <-done; err != nil || err1 != nil {
			t.Fatal(err, err1)
		}
		if !bytes.Equal(got, offered[i]) {
			t.Fatalf("index %d: Server 2 got another block", i)
		}
		if bytes.Equal(got, MarshalBlock(stored[i])) {
			t.Fatal("offered block was not rerandomized")
		}
		// Decryption for the client.
		cts, err := UnmarshalBlock(got)
		if err != nil {
			t.Fatal(err)
		}
		toS1, toClient, err := DecryptServer2(k2, &k1.X, cts, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- s2.SendMessage(toS1) }()
		msg, err := s1.ReceiveMessage()
		if err != nil || <-done != nil {
			t.Fatal(err)
		}
		for k := 0; k < len(msg); k += 32 {
			for j := range offered {
				if bytes.Contains(offered[j], msg[k:k+32]) {
					t.Fatal("Server 1 was shown an R it offered")
				}
			}
		}
		fromS1, err := DecryptServer1(k1, msg)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecryptClient(fromS1, toClient)
		if err != nil || !bytes.Equal(out, plain[i]) {
			t.Fatalf("index %d: client decrypted %x (%v)", i, out, err)
		}
		// Either server's message alone, or swapped messages, do not decrypt.
		if _, err := DecryptClient(toClient, toClient); err == nil {
			t.Fatal("decrypted without Server 1's share")
		}
	}
	// An index beyond the n blocks opens nothing (both sides stay in step).
	idx := circuit.Uint64ToBits(12, IndexBits(n))
	done := make(chan error)
	go func() { done <- d1.Send(make([]bool, len(idx)), make([][]byte, n)) }()
	if _, err := d2.Receive(idx); err == nil || !strings.Contains(err.Error(), "opened no block") {
		t.Fatalf("out-of-range index: %v", err)
	}
	<-done
}

func TestDecryptRejectsGarbage(t *testing.T) {
	if _, err := DecryptClient(make([]byte, 31), make([]byte, 31)); err == nil {
		t.Fatal("ragged share accepted")
	}
	if _, err := UnmarshalBlock(make([]byte, 65)); err == nil {
		t.Fatal("ragged block accepted")
	}
	k, _ := elgamal.NewKeyShare(rand.Reader)
	bad := bytes.Repeat([]byte{0xff}, 32)
	if _, err := DecryptServer1(k, bad); err == nil {
		t.Fatal("invalid element accepted")
	}
}
