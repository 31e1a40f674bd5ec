// Package local runs a K-server and a V-server in one process, each on its own directory
// and loopback (or given) TCP port, with real TLS between everyone: the deployment used by
// `veil serve`, tests and `veil bench peekaboo`. Directories are initialised on first use.
//
// It imports the peekaboo servers and client; never cmd.
package local
