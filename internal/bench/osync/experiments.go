package osbench

import (
	"math/rand/v2"
	"sort"
)

// Throughput is Fig. 4: insert round(Fill*N) files of exactly one block pair (2*C
// bytes) at once, then count epochs until each fraction of them is visible to readers.
// It also reports the bandwidth overhead (backend bytes written / new bytes synced) and
// the writer's CPU per synced MB.
func Throughput(c Config, emit func(Row)) error {
	c.defaults()
	for _, k := range c.Ks {
		for run := 0; run < c.Runs; run++ {
			e, err := newEnv(c, k)
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(c.Seed+uint64(run), 1))
			n := int(c.Fill*float64(c.Files) + 0.5)
			for i := 0; i < n; i++ {
				if _, err := e.put(fname(i), 2*e.C, rng); err != nil {
					e.close()
					return err
				}
			}
			marks := []float64{0.1, 0.25, 0.33, 0.5, 0.6, 0.75, 0.9, 1}
			next, cpu0 := 0, cpu()
			var synced, written int64
			for epoch := 1; next < len(marks); epoch++ {
				if epoch > c.MaxEpochs {
					e.close()
					return errCap("throughput", c.MaxEpochs)
				}
				rep, err := e.w.Sync()
				if err != nil {
					e.close()
					return err
				}
				synced += rep.BytesSynced
				written += rep.BytesWritten
				done := e.w.Stats().CommittedFiles
				for next < len(marks) && float64(done) >= marks[next]*float64(n) {
					frac := marks[next]
					newBytes := frac * float64(n) * float64(2*e.C)
					emit(Row{"experiment": "throughput", "k": k, "run": run, "files": n, "fraction_synced": frac,
						"backend_fill": frac * float64(n) / float64(c.Files), "epochs": epoch,
						"bandwidth_overhead": float64(int64(epoch)*int64(k+1)*int64(c.FileSize)) / newBytes})
					next++
				}
			}
			el := cpu() - cpu0
			emit(Row{"experiment": "writer_cpu", "k": k, "run": run, "synced_mb": float64(synced) / (1 << 20),
				"written_mb": float64(written) / (1 << 20), "cpu_ms_per_synced_mb": float64(el.Milliseconds()) / (float64(synced) / (1 << 20))})
			e.close()
		}
	}
	return nil
}

func fname(i int) string { return "f" + itoa(i) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// Variable is Fig. 5: the same total bytes (a quarter of the backend, the paper's 250 MB
// of 1 GB) as lognormal-size files vs one-block-pair files, k = Ks[0]; epochs until
// every file is visible.
func Variable(c Config, emit func(Row)) error {
	c.defaults()
	k := c.Ks[0]
	for run := 0; run < c.Runs; run++ {
		for _, kind := range []string{"fixed", "variable"} {
			e, err := newEnv(c, k)
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(c.Seed+uint64(run), 2))
			target := c.Files * 2 * e.C / 4
			total, n := 0, 0
			for total < target {
				size := 2 * e.C
				if kind == "variable" {
					size = lognormal(rng, c.Files*2*e.C*144/1024) // the paper's largest: 144 MB of 1 GB
				}
				size = min(size, target-total)
				if _, err := e.put(fname(n), size, rng); err != nil {
					e.close()
					return err
				}
				total += size
				n++
			}
			epochs, err := drainCount(e, c.MaxEpochs, n)
			if err != nil {
				e.close()
				return err
			}
			emit(Row{"experiment": "variable", "kind": kind, "k": k, "run": run, "files": n, "bytes": total, "epochs": epochs})
			e.close()
		}
	}
	return nil
}

// drainCount runs epochs until n files are visible; returns the epochs used.
func drainCount(e *env, maxEpochs, n int) (int, error) {
	for epoch := 1; ; epoch++ {
		if epoch > maxEpochs {
			return 0, errCap("sync", maxEpochs)
		}
		if _, err := e.w.Sync(); err != nil {
			return 0, err
		}
		if e.w.Stats().CommittedFiles >= n {
			return epoch, nil
		}
	}
}

// Latency is Fig. 6: one-block-pair files written one at a time, each as soon as the
// previous one is visible; epochs per file, averaged over fill-level buckets of 10%.
func Latency(c Config, emit func(Row)) error {
	c.defaults()
	for _, k := range c.Ks {
		sums, counts := map[int]float64{}, map[int]int{}
		for run := 0; run < c.Runs; run++ {
			e, err := newEnv(c, k)
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(c.Seed+uint64(run), 3))
			n := int(c.Fill*float64(c.Files) + 0.5)
			for i := 0; i < n; i++ {
				if _, err := e.put(fname(i), 2*e.C, rng); err != nil {
					e.close()
					return err
				}
				ep, err := drainCount(e, c.MaxEpochs, i+1)
				if err != nil {
					e.close()
					return err
				}
				b := int(10 * float64(i) / float64(c.Files))
				sums[b] += float64(ep)
				counts[b]++
			}
			e.close()
		}
		var bs []int
		for b := range sums {
			bs = append(bs, b)
		}
		sort.Ints(bs)
		for _, b := range bs {
			emit(Row{"experiment": "latency", "k": k, "fill": float64(b) / 10, "mean_epochs": sums[b] / float64(counts[b]), "files": counts[b]})
		}
	}
	return nil
}
