// Package dataoram is Metal-ORAM's outside-the-circuit half (paper Sections 5.3-5.5): the
// protocols that move DataORAM's ElGamal-encrypted blocks (internal/metal/elgamal) between
// the two servers in step with IndexORAM (internal/metal/oram).
//
// Built so far:
//
//	DOT       secret-shared doubly oblivious transfer (Section 5.4): Server 1 offers n blocks,
//	          the index i exists only as XOR shares, Server 2 ends with block i and neither
//	          learns i. Server 1 draws n AES keys; a 2PC Run gives Server 2 key k_i alone;
//	          Server 1 sends, shuffled, (AES-GCM_k_j(0), AES-GCM_k_j(block_j)) for every j;
//	          Server 2 opens the one pair its key opens.
//	Decryption Section 5.4's two-party decryption of the fetched block, returned to the
//	          client only: Server 2 blinds each chunk's R with t (R'' = R + tG) for Server 1,
//	          which returns x1*R'' to the client; Server 2 sends the client C - x2*R + t*X1;
//	          the client subtracts. Neither server sees the plaintext or learns anything
//	          linking the block to i.
//
// Still to build: the on-disk DataORAM tree on Server 1, rerandomize-and-permute (Section
// 5.5) with oram.Splitter's halves, and the merge with IndexORAM's access.
//
// Layering: a protocols package. It imports internal/metal/{circuit,twopc,elgamal}, the
// standard library and go-ristretto; it must not import storage, services, other systems
// or cmd.
package dataoram
