package sealedkey

import (
	"os"
	"runtime"
)

// warmThresholdKiB is the argon2id memory from which key warms the heap first: below it
// the page faults cost less than the two collections.
const warmThresholdKiB = 1 << 10

// warmHeap makes n bytes of heap already mapped writable, then free, so that argon2id's
// own allocation of about n bytes (made next) takes those pages instead of fresh ones.
//
// Why: argon2id touches fresh pages so that many of them are mapped read-only first and
// write-faulted later, each such fault flushing the TLB of every CPU the process runs on
// (an IPI; costly in a VM). A perf profile of `veil put` on the 2-core test VM spent ~45%
// of the argon2id unlock in those faults (flush_tlb_mm_range under do_wp_page): 64 MiB
// took 0.26-0.35 s wall, 0.12-0.30 s system time; after writing one byte per page from one
// goroutine (a plain first-touch fault, no flush) it took 0.11-0.24 s, the warming
// included. The result is the same bytes either way; only where the pages come from moves.
func warmHeap(n int) {
	b := make([]byte, n)
	for i, step := 0, os.Getpagesize(); i < len(b); i += step {
		b[i] = 1
	}
	runtime.KeepAlive(b)
	b = nil
	runtime.GC() // frees b now (the collection also finishes sweeping), for argon2id to reuse
}
