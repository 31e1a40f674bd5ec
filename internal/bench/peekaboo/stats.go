package pkbbench

import (
	"math"
	"slices"
	"time"
)

type sample []time.Duration

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func (s sample) row(r Row) Row {
	if len(s) == 0 {
		return r
	}
	c := slices.Clone(s)
	slices.Sort(c)
	var sum float64
	for _, d := range c {
		sum += us(d)
	}
	mean := sum / float64(len(c))
	var v float64
	for _, d := range c {
		v += (us(d) - mean) * (us(d) - mean)
	}
	r.P50us, r.P90us, r.MeanUs = us(c[len(c)/2]), us(c[len(c)*9/10]), mean
	r.StdUs = math.Sqrt(v / float64(len(c)))
	return r
}

func (s sample) mean() float64 { return s.row(Row{}).MeanUs }
