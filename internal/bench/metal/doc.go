// Package metalbench is `veil bench metal`: two real Metal servers on loopback (TLS, mutual
// TLS between them, temporary directories) and the real client, measuring CreateAccount,
// ReadFile and WriteFile latency with the per-phase breakdown of the paper's Table 3 (as
// Server 1 measures it), at the sizes given (Fig. 10's axes: number of files, file size).
//
// Layering: an experiment, run by cmd/veil only. It imports the Metal server and client.
package metalbench
