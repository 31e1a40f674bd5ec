package oprf

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cloudflare/circl/group"
	circl "github.com/cloudflare/circl/oprf"
	"github.com/cloudflare/circl/zk/dleq"
	"github.com/veil-project/veil/internal/testutil"
)

// TestRFC9497Vectors checks every step of the VOPRF against RFC 9497's own vectors
// (Appendix A.1.2): key, blinded elements, evaluations, the batched proof (with the
// RFC's proof nonce) and the outputs.
func TestRFC9497Vectors(t *testing.T) {
	var tv struct {
		SkSm, PkSm string
		Vectors    []struct {
			Batch                                                   int
			Input, Blind, BlindedElement, EvaluationElement, Output string
			Proof                                                   struct{ Proof, R string }
		}
	}
	b, err := os.ReadFile("../../testdata/oprf/rfc9497-voprf-ristretto255.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tv); err != nil {
		t.Fatal(err)
	}
	k, err := parseR255Private(testutil.Unhex(t, tv.SkSm))
	if err != nil {
		t.Fatal(err)
	}
	if pk, _ := k.Public().MarshalBinary(); hex.EncodeToString(pk) != tv.PkSm {
		t.Fatalf("public key %x, RFC %s", pk, tv.PkSm)
	}
	if len(tv.Vectors) != 3 {
		t.Fatalf("%d vectors, want the RFC's 3", len(tv.Vectors))
	}
	for i, v := range tv.Vectors {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			inputs, blinds := list(t, v.Input), list(t, v.Blind)
			if len(inputs) != v.Batch || len(blinds) != v.Batch {
				t.Fatalf("batch %d with %d inputs, %d blinds", v.Batch, len(inputs), len(blinds))
			}
			// RFC 9497's own (multiplicative) blinding with the RFC's blinds: the blinded
			// elements it pins, their evaluations, the proof, and the outputs.
			bs := make([]*scal, len(blinds))
			cEls := make([]*element, len(inputs))
			blinded := make([][]byte, len(inputs))
			for j, s := range blinds {
				bs[j] = scalar(t, hex.EncodeToString(s))
				cEls[j] = newElement().Mul(hashToGroup(inputs[j]), bs[j])
				blinded[j] = encode(cEls[j])
			}
			if got := join(blinded); got != v.BlindedElement {
				t.Fatalf("blinded %s, RFC %s", got, v.BlindedElement)
			}
			evals, proof, err := k.(*r255Private).evaluate(blinded, scalar(t, v.Proof.R))
			if err != nil {
				t.Fatal(err)
			}
			if got := join(evals); got != v.EvaluationElement {
				t.Fatalf("evaluated %s, RFC %s", got, v.EvaluationElement)
			}
			if hex.EncodeToString(proof) != v.Proof.Proof {
				t.Fatalf("proof %x, RFC %s", proof, v.Proof.Proof)
			}
			pub := k.Public().(*r255Public)
			dEls := make([]*element, len(evals))
			outs := make([][]byte, len(evals))
			for j, e := range evals {
				if dEls[j], err = parseElement(e); err != nil {
					t.Fatal(err)
				}
				outs[j] = finalizeHash(inputs[j], newElement().Mul(dEls[j], newScalar().Invert(bs[j])))
			}
			if !verify(pub.pk, nil, pub.raw, cEls, dEls, blinded, evals, proof) {
				t.Fatal("the RFC's proof does not verify")
			}
			if got := join(outs); got != v.Output {
				t.Fatalf("output %s, RFC %s", got, v.Output)
			}

			// Blind's additive blinding finalizes to the same outputs, with pk's tables
			// (a batch of tableMin or more) and without (a fresh key, a small batch).
			for _, withTables := range []bool{false, true} {
				k2, err := parseR255Private(testutil.Unhex(t, tv.SkSm))
				if err != nil {
					t.Fatal(err)
				}
				pub := k2.Public().(*r255Public)
				if withTables {
					pub.tables(tableMin)
				}
				bl, err := pub.Blind(rand.Reader, inputs)
				if err != nil {
					t.Fatal(err)
				}
				evals, proof, err := k2.Evaluate(bl.Elements)
				if err != nil {
					t.Fatal(err)
				}
				outs, err := pub.outputs(bl, evals, proof)
				if err != nil {
					t.Fatal(err)
				}
				if got := join(outs); got != v.Output || (pub.tab.Load() != nil) != withTables {
					t.Fatalf("additive blinding (tables %v): output %s, RFC %s", withTables, got, v.Output)
				}
			}
		})
	}
}

// TestMatchesCircl runs batches both ways between this implementation and circl/oprf:
// circl's client (RFC 9497's multiplicative blinding) verifies our server's proofs and
// finalizes to the same outputs as our client (additive blinding), and our client
// verifies circl's server and gets those outputs again.
func TestMatchesCircl(t *testing.T) {
	suite := circl.SuiteRistretto255
	g := group.Ristretto255
	for _, n := range []int{1, 2, 3, 7, 40} {
		k := testKey(t, Ristretto255)
		raw, _ := k.MarshalBinary()
		ck := new(circl.PrivateKey)
		if err := ck.UnmarshalBinary(suite, raw); err != nil {
			t.Fatal(err)
		}
		cli := circl.NewVerifiableClient(suite, ck.Public())
		srv := circl.NewVerifiableServer(suite, ck)
		in := digests(n, fmt.Sprint("circl", n))

		// circl blinds; ours evaluates; circl verifies and finalizes.
		fin, req, err := cli.Blind(in)
		if err != nil {
			t.Fatal(err)
		}
		cBlinded := make([][]byte, n)
		for i, e := range req.Elements {
			cBlinded[i], _ = e.MarshalBinaryCompress()
		}
		evals, proof, err := k.Evaluate(cBlinded)
		if err != nil {
			t.Fatal(err)
		}
		ev := &circl.Evaluation{Elements: make([]circl.Evaluated, n), Proof: new(dleq.Proof)}
		for i, e := range evals {
			ev.Elements[i] = g.NewElement()
			if err := ev.Elements[i].UnmarshalBinary(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := ev.Proof.UnmarshalBinary(g, proof); err != nil {
			t.Fatal(err)
		}
		cOuts, err := cli.Finalize(fin, ev)
		if err != nil {
			t.Fatalf("n=%d: circl rejects our evaluation: %v", n, err)
		}

		// Ours blinds additively and evaluates: the same outputs.
		bl, err := k.Public().Blind(rand.Reader, in)
		if err != nil {
			t.Fatal(err)
		}
		evals, proof, err = k.Evaluate(bl.Elements)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := k.Public().(*r255Public).outputs(bl, evals, proof)
		if err != nil {
			t.Fatal(err)
		}
		for i := range outs {
			if !bytes.Equal(outs[i], cOuts[i]) {
				t.Fatalf("n=%d: output %d differs from circl's", n, i)
			}
		}

		// circl evaluates our additively blinded elements (its own proof nonce); ours
		// verifies and gets the same outputs.
		ours := &circl.EvaluationRequest{Elements: make([]circl.Blinded, n)}
		for i, e := range bl.Elements {
			ours.Elements[i] = g.NewElement()
			if err := ours.Elements[i].UnmarshalBinary(e); err != nil {
				t.Fatal(err)
			}
		}
		cev, err := srv.Evaluate(ours)
		if err != nil {
			t.Fatal(err)
		}
		cEvals := make([][]byte, n)
		for i, e := range cev.Elements {
			cEvals[i], _ = e.MarshalBinaryCompress()
		}
		cProof, _ := cev.Proof.MarshalBinary()
		outs2, err := k.Public().(*r255Public).outputs(bl, cEvals, cProof)
		if err != nil {
			t.Fatalf("n=%d: circl's evaluation rejected: %v", n, err)
		}
		for i := range outs2 {
			if !bytes.Equal(outs2[i], outs[i]) {
				t.Fatalf("n=%d: output %d from circl's evaluation differs", n, i)
			}
		}
	}
}

func list(t *testing.T, s string) [][]byte {
	var out [][]byte
	for _, p := range strings.Split(s, ",") {
		out = append(out, testutil.Unhex(t, p))
	}
	return out
}

func join(bs [][]byte) string {
	var ss []string
	for _, b := range bs {
		ss = append(ss, hex.EncodeToString(b))
	}
	return strings.Join(ss, ",")
}

func scalar(t *testing.T, s string) *scal {
	t.Helper()
	x, ok := decodeScalar(testutil.Unhex(t, s))
	if !ok {
		t.Fatalf("scalar %s is not canonical", s)
	}
	return x
}
