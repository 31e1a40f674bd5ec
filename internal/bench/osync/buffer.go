package osbench

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/veil-project/veil/internal/oblivisync"
)

// Buffer is Fig. 7: fill the backend to 20/50/75% with lognormal-size files, then thrash:
// before each epoch rewrite files (preferring small ones) for about B bytes on average
// (the paper's 1 MB per write batch), and record the pending-buffer size at every sync.
func Buffer(c Config, epochs int, emit func(Row)) error {
	c.defaults()
	k := c.Ks[0]
	for _, fill := range []float64{0.2, 0.5, 0.75} {
		var samples []float64
		full := 0 // syncs before which the buffer was full (writes refused until epochs drain it)
		for run := 0; run < c.Runs; run++ {
			e, err := newEnv(c, k)
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(c.Seed+uint64(run), 4))
			target := int(fill * float64(c.Files*2*e.C))
			var inos []uint64
			var sizes []int
			for total := 0; total < target; {
				size := min(lognormal(rng, c.FileSize*8), target-total)
				ino, err := e.put(fname(len(inos)), size, rng)
				if err != nil {
					e.close()
					return err
				}
				inos, sizes = append(inos, ino), append(sizes, size)
				total += size
			}
			if _, err := drainCount(e, c.MaxEpochs, len(inos)); err != nil {
				e.close()
				return err
			}
			// Rewrite choice: weight 1/sqrt(size), favouring small files as the
			// measured write distributions do.
			cum := make([]float64, len(sizes))
			acc := 0.0
			for i, s := range sizes {
				if c.ThrashMaxFile <= 0 || s <= c.ThrashMaxFile {
					acc += 1 / math.Sqrt(float64(s))
				}
				cum[i] = acc
			}
			for ep := 0; ep < epochs; ep++ {
				batch := int(c.Thrash * float64(c.FileSize) * rng.ExpFloat64()) // mean Thrash*B bytes
				for done := 0; done < batch; {
					i := sort.SearchFloat64s(cum, rng.Float64()*acc)
					i = min(i, len(sizes)-1)
					err := e.fill(inos[i], sizes[i], rng)
					if errors.Is(err, oblivisync.ErrNoSpace) {
						full++ // the workload outruns k files per epoch: sync, as a user must
						break
					}
					if err != nil {
						e.close()
						return err
					}
					done += sizes[i]
				}
				rep, err := e.w.Sync()
				if err != nil {
					e.close()
					return err
				}
				samples = append(samples, float64(rep.PendingBytes))
			}
			e.close()
		}
		sort.Float64s(samples)
		q := func(p float64) float64 { return samples[min(len(samples)-1, int(p*float64(len(samples))))] }
		emit(Row{"experiment": "buffer", "k": k, "fill": fill, "thrash": c.Thrash, "thrash_max_file": c.ThrashMaxFile, "syncs": len(samples), "p20": q(0.2), "p50": q(0.5),
			"p80": q(0.8), "p95": q(0.95), "max": samples[len(samples)-1], "max_blocks": samples[len(samples)-1] / float64(c.FileSize/2),
			"full_syncs": full})
	}
	return nil
}
