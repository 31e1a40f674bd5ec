// Package index is the K-server's in-memory search index over (pair id, key): an exact
// map and trigram postings for substring search (candidates from the rarest trigram of the
// query, each verified with strings.Contains; queries shorter than three bytes scan every
// key). Results come oldest publication first. Matching is byte-wise and case-sensitive.
// The K-server rebuilds it from its bbolt file at start; the index itself is not durable.
//
// It imports only internal/peekaboo/wire (for ID and KeyItem); never a server, client or cmd.
package index
