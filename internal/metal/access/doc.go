// Package access is one Metal file access end to end (paper Sections 4-5), as a library
// both servers run over one twopc.Session, plus the client's side of it:
//
//   - the client XOR-shares its request (capability, file id, read/write) between the
//     servers and sends Server 1 an ElGamal encryption of the new block (of zeros for a
//     read: the servers cannot tell which);
//   - one Run checks the capability (Metal-AC, ac.CheckAccess) and scans the XOR-shared
//     position map (non-recursive: a linear scan of 2^D+1 entries) for the file's leaf,
//     revealing only the leaf, which is uniformly random; a refused request accesses a
//     reserved dummy id instead, so it looks the same;
//   - the IndexORAM access runs inside 2PC (oram.Party, Circuit ORAM with Section 5.6's
//     tracking), giving XOR shares of the slot the file's block was read from, the stash
//     slot it goes to and the two evictions' permutations;
//   - DataORAM (ElGamal ciphertext blocks on Server 1's disk, Store) follows: the block is
//     fetched by SS-DOT (dataoram.DOT, Section 5.4) and decrypted to the client only
//     (dataoram.Decrypt*); Section 5.5's insert and the two evictions of 5.6, composed
//     inside 2PC into one permutation and split in the same Run (permCircuit), are
//     applied once by both servers in turn, each rerandomizing every ciphertext.
//
// State (Metal-AC shares, position map share, IndexORAM share, DataORAM) is committed to
// each server's bbolt file at the end of every access, before the reply leaves.
//
// Layering: a protocols package over internal/metal/{ac,oram,dataoram,elgamal,twopc,
// circuit} and bbolt. It must not import servers, clients, cmd or other systems.
package access
