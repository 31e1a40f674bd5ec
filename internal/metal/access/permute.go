package access

import "fmt"

// permute is the distributed permutation of Section 5.5 on ciphertext blocks, in gather
// form (applying q to A gives B[j] = A[q[j]]): Server 1 rerandomizes arr, applies its half
// and sends the result; Server 2 rerandomizes, applies its half and sends it back; Server 1
// returns it. half is this server's permutation from oram.Splitter. Server 2 passes nil arr.
func (p *Party) permute(arr [][]byte, half []int) ([][]byte, error) {
	n, size := len(half), p.st.P.CTSize()
	if p.garbler() {
		if len(arr) != n {
			return nil, fmt.Errorf("access: permuting %d blocks with a permutation of %d", len(arr), n)
		}
		msg, err := p.applyHalf(arr, half)
		if err == nil {
			err = p.sess.SendMessage(msg)
		}
		if err != nil {
			return nil, err
		}
		back, err := p.sess.ReceiveMessage()
		if err != nil {
			return nil, err
		}
		return splitBlocks(back, n, size)
	}
	msg, err := p.sess.ReceiveMessage()
	if err != nil {
		return nil, err
	}
	in, err := splitBlocks(msg, n, size)
	if err != nil {
		return nil, err
	}
	out, err := p.applyHalf(in, half)
	if err != nil {
		return nil, err
	}
	return nil, p.sess.SendMessage(out)
}

// applyHalf rerandomizes every block and lays them out in the order half gathers them.
func (p *Party) applyHalf(arr [][]byte, half []int) ([]byte, error) {
	rr, err := p.rerandomizeAll(arr)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(arr)*p.st.P.CTSize())
	for _, j := range half {
		out = append(out, rr[j]...)
	}
	return out, nil
}

func splitBlocks(msg []byte, n, size int) ([][]byte, error) {
	if len(msg) != n*size {
		return nil, fmt.Errorf("access: permuted array of %d bytes, want %d blocks of %d", len(msg), n, size)
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = msg[i*size : (i+1)*size]
	}
	return out, nil
}
