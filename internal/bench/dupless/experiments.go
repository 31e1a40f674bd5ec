package duplessbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fig5 is the time breakdown of one 1 MB put (paper Fig. 5: total 4,099 ms on Dropbox, of
// which KS 374 ms, encryption 49 ms, upload 3,676 ms).
func (e *env) fig5(ctx context.Context, cfg Config, emit func(Row)) error {
	e.phases = map[string][]time.Duration{}
	total, err := repeat(cfg.Reps*2, cfg.MinTime, func(i int) (time.Duration, error) {
		p, err := e.freshFile("fig5.bin", 1<<20)
		if err != nil {
			return 0, err
		}
		t := time.Now()
		s, err := e.client.Put(ctx, []string{p}, "fig5")
		if err == nil {
			err = s.Err()
		}
		return time.Since(t), err
	})
	if err != nil {
		return err
	}
	paper := map[string]string{"keys": "374 ms (KS, OPRFv1)", "encrypt": "49 ms", "upload": "3,676 ms (Dropbox)", "total": "4,099 ms"}
	for _, p := range []string{"lock", "chunk", "keys", "encrypt", "upload", "record", "unlock"} {
		emit(Row{Experiment: "fig5", What: p, Size: 1 << 20, Ms: ms(median(e.phases[p])), Paper: paper[p]})
	}
	emit(Row{Experiment: "fig5", What: "total", Size: 1 << 20, Ms: ms(total), Paper: paper["total"]})
	return nil
}

// fig67 compares put and get through veil with a plain put/get of the same bytes to the
// same storage service (paper Figs. 6-7: put 1.5x at 1 KB without TLS, about 1.15x for
// large files). Each veil run alternates with a plain one, so that a change in the
// machine's load between them weighs on both sides of the ratio alike; the rows also give
// the CPU time each took (all parties run in this process).
func (e *env) fig67(ctx context.Context, cfg Config, emit func(Row)) error {
	for _, size := range cfg.Sizes {
		var sent int64
		put, plainPut, err := alternate(cfg.Reps, cfg.MinTime, func(i int) (op, error) {
			p, err := e.freshFile(fmt.Sprintf("f%d-%d", size, i), size)
			if err != nil {
				return op{}, err
			}
			return timed(func() error {
				s, err := e.client.Put(ctx, []string{p}, "fig67")
				if err == nil {
					err = s.Err()
				}
				sent = s.BytesUploaded
				return err
			})
		}, func(i int) (op, error) {
			p, err := e.freshFile(fmt.Sprintf("p%d", i), size)
			if err != nil {
				return op{}, err
			}
			return timed(func() error {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				return e.raw.Put(ctx, "plain", fmt.Sprintf("p%d-%d", size, i), f, size)
			})
		})
		if err != nil {
			return err
		}
		get, plainGet, err := alternate(cfg.Reps, cfg.MinTime, func(i int) (op, error) {
			return timed(func() error {
				s, err := e.client.Get(ctx, fmt.Sprintf("fig67/f%d-0", size), filepath.Join(e.scratch, "got"))
				if err == nil {
					err = s.Err()
				}
				return err
			})
		}, func(i int) (op, error) {
			return timed(func() error {
				rc, err := e.raw.Get(ctx, "plain", fmt.Sprintf("p%d-0", size))
				if err != nil {
					return err
				}
				defer rc.Close()
				f, err := os.Create(filepath.Join(e.scratch, "plain-got"))
				if err != nil {
					return err
				}
				_, err = io.Copy(f, rc)
				if err == nil {
					err = f.Sync()
				}
				f.Close()
				return err
			})
		})
		if err != nil {
			return err
		}
		emit(Row{Experiment: "fig6-7", What: "put", Size: size, Ms: ms(put.wall), PlainMs: ms(plainPut.wall),
			Ratio: float64(put.wall) / float64(plainPut.wall), CPUMs: ms(put.cpu), PlainCPUMs: ms(plainPut.cpu),
			BytesSent: sent, Paper: paperPut(size)})
		emit(Row{Experiment: "fig6-7", What: "get", Size: size, Ms: ms(get.wall), PlainMs: ms(plainGet.wall),
			Ratio: float64(get.wall) / float64(plainGet.wall), CPUMs: ms(get.cpu), PlainCPUMs: ms(plainGet.cpu)})
	}
	return nil
}

func paperPut(size int64) string {
	switch {
	case size <= 1<<10:
		return "1.63x with TLS, 1.5x without"
	case size >= 1<<20:
		return "about 1.15x"
	}
	return ""
}

// overhead measures the bytes stored beyond the file's own, for a 1 KiB incompressible
// file with an n-byte name (paper: 3n+120 bytes).
func (e *env) overhead(ctx context.Context, emit func(Row)) error {
	for _, n := range []int{1, 10, 50, 100} {
		name := strings.Repeat("n", n)
		p, err := e.freshFile(name, 1024)
		if err != nil {
			return err
		}
		s, err := e.client.Put(ctx, []string{p}, "overhead")
		if err == nil {
			err = s.Err()
		}
		if err != nil {
			return err
		}
		over := s.BytesUploaded - 1024 + nameOverhead(n)
		emit(Row{Experiment: "overhead", What: fmt.Sprintf("name of %d bytes", n), Size: 1024,
			Overhead: over, Paper: fmt.Sprintf("%d bytes (3n+120)", 3*n+120)})
	}
	return nil
}
