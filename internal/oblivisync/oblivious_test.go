package oblivisync

import (
	"context"
	"fmt"
	"math"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// observe lists what a cloud provider sees of the backend directory: name -> identity
// (inode, size, mtime); a replaced file gets a new identity.
func observe(t *testing.T, dir string) map[string]string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		out[e.Name()] = fmt.Sprintf("%d/%d/%d", st.Ino, info.Size(), info.ModTime().UnixNano())
	}
	return out
}

// trace runs epochs with the workload step before each and records, per epoch, the
// names of the backend files that changed and their sizes.
func trace(t *testing.T, epochs int, step func(w *Writer, i int)) (counts map[string]int, sizes map[int64]int, perEpoch map[int]int) {
	dir := newBackend(t, 64, 16<<10, 3)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	counts, sizes, perEpoch = map[string]int{}, map[int64]int{}, map[int]int{}
	before := observe(t, dir)
	for i := 0; i < epochs; i++ {
		step(w, i)
		if _, err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		after := observe(t, dir)
		if len(after) != len(before) {
			t.Fatalf("epoch %d: backend has %d entries, had %d", i, len(after), len(before))
		}
		changed := 0
		for name, id := range after {
			if before[name] == "" {
				t.Fatalf("epoch %d: new backend entry %q", i, name)
			}
			if before[name] != id {
				changed++
				counts[name]++
				info, _ := os.Stat(dir + "/" + name)
				sizes[info.Size()]++
			}
		}
		perEpoch[changed]++
		before = after
	}
	return counts, sizes, perEpoch
}

// TestObliviousness records the write pattern over 200 epochs for an idle user and for
// one hammering a single file, and checks they are indistinguishable: every epoch
// replaces exactly k+1 files, all of exactly B bytes, and which files are chosen passes
// a chi-square test both against uniform and between the two workloads.
func TestObliviousness(t *testing.T) {
	const epochs, k, n = 200, 3, 64
	idleC, idleS, idleE := trace(t, epochs, func(*Writer, int) {})
	var ino uint64
	busyC, busyS, busyE := trace(t, epochs, func(w *Writer, i int) {
		if i == 0 {
			ino = must(w.Create(rootIno, "hot.db", 0o644, 0, 0)).Ino
		}
		buf := make([]byte, 20<<10)
		for j := range buf {
			buf[j] = byte(i + j)
		}
		must(w.Write(ino, int64(i%7)*4096, buf))
	})
	for name, c := range []map[int]int{idleE, busyE} {
		if len(c) != 1 || c[k+2] != epochs {
			t.Fatalf("workload %d: files replaced per epoch %v, want always %d (k, super, lease)", name, c, k+2)
		}
	}
	for name, s := range []map[int64]int{idleS, busyS} {
		if len(s) != 2 || s[16<<10] != epochs*(k+1) || s[leaseLen] != epochs {
			t.Fatalf("workload %d: sizes written %v, want %d x %d and %d x %d (lease)", name, s, epochs*(k+1), 16<<10, epochs, leaseLen)
		}
	}
	for _, name := range []string{superName, leaseName} {
		if idleC[name] != epochs || busyC[name] != epochs {
			t.Fatalf("%s rewritten %d/%d times, want %d", name, idleC[name], busyC[name], epochs)
		}
	}
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		names = append(names, blockName(uint32(i)))
	}
	exp := float64(epochs*k) / n
	var gofIdle, gofBusy, homog float64
	for _, f := range names {
		a, b := float64(idleC[f]), float64(busyC[f])
		gofIdle += (a - exp) * (a - exp) / exp
		gofBusy += (b - exp) * (b - exp) / exp
		if a+b > 0 { // 2 x n contingency table, equal row totals
			e := (a + b) / 2
			homog += (a-e)*(a-e)/e + (b-e)*(b-e)/e
		}
	}
	df := float64(n - 1)
	pIdle, pBusy, pHom := chiSquareP(gofIdle, df), chiSquareP(gofBusy, df), chiSquareP(homog, df)
	t.Logf("chi-square (df=%d): idle vs uniform %.1f (p=%.3f), busy vs uniform %.1f (p=%.3f), idle vs busy %.1f (p=%.3f)",
		n-1, gofIdle, pIdle, gofBusy, pBusy, homog, pHom)
	for what, p := range map[string]float64{"idle vs uniform": pIdle, "busy vs uniform": pBusy, "idle vs busy": pHom} {
		if p < 1e-4 {
			t.Errorf("%s: p=%.2g, file choice is distinguishable", what, p)
		}
	}
}

// TestEpochTiming checks that a mounted writer's epochs follow the drip clock whether or
// not anything is pending: in a synctest bubble (fake time, which moves only while every
// goroutine of the test waits), every interval between two epochs is exactly the drip
// time, idle and busy alike. The schedule is what the test asserts, not this machine's
// speed: an epoch that waited for pending work, or ran early because of it, would show
// as an interval other than 10ms.
func TestEpochTiming(t *testing.T) {
	intervals := func(t *testing.T, step func(w *Writer)) []time.Duration {
		dir := newBackend(t, 64, 16<<10, 3)
		w := openW(t, dir, t.TempDir())
		defer w.Close()
		ino := must(w.Create(rootIno, "f", 0o644, 0, 0)).Ino
		var stamps []time.Time
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stepped := make(chan struct{})
		go func() {
			defer close(stepped)
			for ctx.Err() == nil {
				step(w)
				w.Write(ino, 0, nil)
				time.Sleep(time.Millisecond)
			}
		}()
		w.Run(ctx, func(EpochReport) {
			if stamps = append(stamps, time.Now()); len(stamps) == 40 {
				cancel()
			}
		})
		<-stepped
		var gaps []time.Duration
		for i := 1; i < len(stamps); i++ {
			gaps = append(gaps, stamps[i].Sub(stamps[i-1]))
		}
		return gaps
	}
	for _, c := range []struct {
		name string
		step func(w *Writer)
	}{
		{"idle", func(*Writer) {}},
		{"busy", func(w *Writer) {
			ino := must(w.Lookup(rootIno, "f")).Ino
			w.Write(ino, 0, make([]byte, 8<<10)) // may hit ErrNoSpace: the buffer is bounded
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gaps := intervals(t, c.step)
				if len(gaps) != 39 {
					t.Fatalf("%d intervals, want 39", len(gaps))
				}
				for i, d := range gaps {
					if d != 10*time.Millisecond {
						t.Fatalf("interval %d between epochs: %s, want the drip time 10ms", i, d)
					}
				}
			})
		})
	}
}

// chiSquareP is P(X >= x) for X ~ chi-square(df): the regularized upper incomplete gamma
// Q(df/2, x/2) by series (x < a+1) or continued fraction (Numerical Recipes 6.2).
func chiSquareP(x, df float64) float64 {
	a, z := df/2, x/2
	if z <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	if z < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < 500; n++ {
			term *= z / (a + float64(n))
			sum += term
			if term < sum*1e-15 {
				break
			}
		}
		return 1 - sum*math.Exp(-z+a*math.Log(z)-lg)
	}
	b, c, d := z+1-a, 1/1e-300, 1/(z+1-a)
	h := d
	for i := 1; i < 500; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < 1e-300 {
			d = 1e-300
		}
		c = b + an/c
		if math.Abs(c) < 1e-300 {
			c = 1e-300
		}
		d = 1 / d
		h *= d * c
		if math.Abs(d*c-1) < 1e-15 {
			break
		}
	}
	return math.Exp(-z+a*math.Log(z)-lg) * h
}

func TestChiSquareP(t *testing.T) {
	// Closed forms: even df, Q = exp(-x/2) * sum_{i<df/2} (x/2)^i/i!; df=1, erfc(sqrt(x/2)).
	for _, c := range []struct{ x, df, p float64 }{{64, 64, 0.4764883054762586}, {90, 64, 0.017782370221741346},
		{40, 64, 0.9919082453301649}, {10, 4, 0.0404276819945128}, {3.84, 1, 0.05004352124870509}} {
		if got := chiSquareP(c.x, c.df); math.Abs(got-c.p) > 1e-9 {
			t.Errorf("chiSquareP(%v, %v) = %.4f, want %.4f", c.x, c.df, got, c.p)
		}
	}
}
