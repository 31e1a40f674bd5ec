package storeserver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// worstPath is a new path of exactly depth components and total bytes (every directory
// new: the most keys a request can write), made unique by i.
func worstPath(i, depth, total int) (dir, name string) {
	per := (total - (depth - 1)) / depth
	comps := make([]string, depth)
	for k := range comps {
		comps[k] = strings.Repeat("x", per)
	}
	id := fmt.Sprintf("%08d", i)
	comps[0] = id + strings.Repeat("x", max(per-len(id), 0))
	p := strings.Join(comps, "/")
	p += strings.Repeat("y", total-len(p))
	return filepathSplit(p)
}

func filepathSplit(p string) (string, string) {
	i := strings.LastIndexByte(p, '/')
	return p[:i], p[i+1:]
}

// BenchmarkWorstRequest measures the most expensive accepted request at each limit (a put
// creating every directory of its path), and a refused one, in-process on a real
// database: go test ./internal/storeserver -run '^$' -bench WorstRequest -benchtime 200x
// Reported: time, allocations and database growth per request.
func BenchmarkWorstRequest(b *testing.B) {
	run := func(b *testing.B, cfg Config, prep func(*Namespace), req func(ns *Namespace, i int) error) {
		s := newTestService(b, cfg)
		ns, _ := addUser(b, s, "bench")
		if prep != nil {
			prep(ns)
		}
		st0 := boltDB(b, s).Stats()
		before := st0.TxStats.GetPageAlloc()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if err := req(ns, i); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		st1 := boltDB(b, s).Stats()
		b.ReportMetric(float64(st1.TxStats.GetPageAlloc()-before)/float64(b.N), "dbpageB/op")
	}
	for _, total := range []int{512, 1024, 2048, 4096} {
		b.Run(fmt.Sprintf("depth64/path%d", total), func(b *testing.B) {
			run(b, Config{}, nil, func(ns *Namespace, i int) error {
				d, n := worstPath(i, DefaultMaxDepth, total)
				return ns.Put(b.Context(), d, n, strings.NewReader("x"), 1)
			})
		})
	}
	for _, depth := range []int{17, 32, 64} {
		b.Run(fmt.Sprintf("path4096/depth%d", depth), func(b *testing.B) {
			run(b, Config{}, nil, func(ns *Namespace, i int) error {
				d, n := worstPath(i, depth, DefaultMaxPathLen)
				return ns.Put(b.Context(), d, n, strings.NewReader("x"), 1)
			})
		})
	}
	b.Run("name255", func(b *testing.B) {
		run(b, Config{}, nil, func(ns *Namespace, i int) error {
			n := fmt.Sprintf("%08d", i) + strings.Repeat("n", 247)
			return ns.Put(b.Context(), "", n, strings.NewReader("x"), 1)
		})
	})
	for _, have := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("dir-with-%d-entries", have), func(b *testing.B) {
			run(b, Config{}, func(ns *Namespace) { fillDir(b, ns, "full", have) }, func(ns *Namespace, i int) error {
				return ns.Put(b.Context(), "full", fmt.Sprintf("new-%08d", i), strings.NewReader("x"), 1)
			})
		})
	}
	b.Run("refused-deep16000", func(b *testing.B) {
		deep := strings.Repeat("a/", 15_999) + "a"
		run(b, Config{}, nil, func(ns *Namespace, i int) error {
			if _, _, err := ns.s.cfg.Limits.parsePath(deep, false); err == nil {
				return fmt.Errorf("accepted")
			}
			return nil
		})
	})
}

// fillDir puts n directories into dir in one transaction (setup, not measured).
func fillDir(b *testing.B, ns *Namespace, dir string, n int) {
	if err := ns.Create(b.Context(), dir); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UnixNano()
	err := boltDB(b, ns.s).Update(func(tx *bolt.Tx) error {
		t := boltTx{tx}
		for i := range n {
			name := fmt.Sprintf("e%08d", i)
			if err := ns.addEntry(t, dir, name); err != nil {
				return err
			}
			if err := t.putEntry(ns.user, dir, name, entry{kind: kindDir, modTime: now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
