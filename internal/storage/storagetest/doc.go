// Package storagetest is the conformance suite every storage.Backend runs: one call of
// Run(t, factory) from a backend's test file checks the whole contract written on
// storage.Backend (round trips up to 100 MiB streamed, names, listing, search, create, move,
// delete, errors, concurrent writers, failing readers), and every optional capability a
// backend has (batches and their conditions, conditional moves, creates).
//
// Only _test.go files import it. It imports storage and the standard library only, never a
// concrete backend.
package storagetest
