// Package duplessbench measures the DupLESS client end to end, reproducing the paper's
// experiments on this machine: the time breakdown of one 1 MB put (Fig. 5), put and get time
// against a plain put/get of the same bytes to the same storage service over 1 KB..64 MB
// (Figs. 6 and 7), bytes sent, and the storage overhead per file (paper: 3n+120 bytes for an
// n-byte name). It starts a real all-in-one deployment (key server + storage service, TLS on
// loopback) and drives it through the real client, so it sits above every other layer:
// only cmd/veil imports it.
package duplessbench
