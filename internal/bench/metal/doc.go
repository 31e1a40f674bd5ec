// Package metalbench is `veil bench metal`: two real Metal servers on loopback (TLS, mutual
// TLS between them, temporary directories) and the real client, measuring CreateAccount,
// ReadFile and WriteFile latency with the per-phase breakdown of the paper's Table 3 (as
// Server 1 measures it), at the sizes given (Fig. 10's axes: number of files, file size).
//
// RunCompare (`veil bench metal --primitive`) measures real Metal beside Primitive Metal
// (internal/metal/primitive, the paper's Section 5.2 baseline with the data inside 2PC) at
// the same points: both servers of each in this process over one counted loopback TCP link,
// latency, garbled AND gates and bytes between the servers per access (the paper's Table 5).
//
// Layering: an experiment, run by cmd/veil only. It imports the Metal server and client, and the access and
// primitive libraries for the comparison.
package metalbench
