// Package primitive is Primitive Metal (paper Section 5.2), the baseline that Metal-ORAM
// improves on: the whole Circuit ORAM, file data included, inside the two servers' 2PC.
//
// Each ORAM block carries a whole file (BlockSize bytes) in its value, and the tree is held
// as XOR shares by the two servers (oram.Party: its circuits take values of any width). One
// access is three 2PC Runs on one twopc.Session:
//
//   - front: Metal-AC's capability check (ac.CheckAccess) and a linear scan of the
//     XOR-shared position map for the file's leaf, revealing only the leaf (uniformly
//     random); a refused request accesses a reserved dummy id instead;
//   - the ORAM access (oram.Party.AccessLeaf): the whole stash and path, data included, is
//     read inside the circuit, the block is re-inserted into the stash with the client's
//     new data (a write) or its own (a read), and two evictions move data blocks inside
//     the circuit;
//   - reply: the old data masked to zeros unless the request was an allowed read, output
//     as XOR shares, one for the client from each server.
//
// The client XOR-shares its Metal-AC request and its data (zeros for a read) between the
// servers (NewRequest) and XORs their replies (Finish). Neither server ever holds anything
// but shares, and the only value revealed is the path's leaf.
//
// It exists to be measured against Metal (`veil bench metal --primitive`): state is kept in
// memory only (no persistence, no server process, no wire format of its own). Costs grow
// with the block size inside 2PC: a few AND gates per data bit per stash+path slot, the
// bottleneck Section 5.3 removes.
//
// Layering: a protocols package over internal/metal/{ac,oram,circuit,twopc}. It must not
// import the real Metal access pipeline (access, dataoram, elgamal), storage, servers,
// clients, cmd or other systems.
package primitive
