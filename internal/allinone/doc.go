// Package allinone runs a whole veil deployment on one machine: a key server and a
// deduplicating storage service sharing one data directory, on loopback by default. It
// is what `veil serve` runs, so that a single machine works out of the box. It composes
// the services (keyserver, store); clients never import it.
package allinone
