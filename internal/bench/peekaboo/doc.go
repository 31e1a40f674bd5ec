// Package pkbbench is `veil bench peekaboo`: it starts real K- and V-servers on loopback
// (TLS and mutual TLS, as deployed) plus a plain key-value server without privacy (the
// report's "regular" baseline, same index, same TLS), loads them with the same pairs, and
// measures the report's Figs. 9-11, throughput and bulk publication. Results are Rows for
// the caller to print; nothing here prints.
//
// It imports the peekaboo servers and client; never cmd.
package pkbbench
