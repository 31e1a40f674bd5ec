package twopc

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is this process's user+system CPU time. The benchmarks below run on one
// goroutine, so per-CPU-second rates are per-core rates even on a shared, oversubscribed
// machine where wall-clock rates mostly measure the other tenants.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerCPU adds a "<unit>/cpu-s" metric: n units done in the CPU time since start.
func reportPerCPU(b *testing.B, start time.Duration, n float64, unit string) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(n/d.Seconds(), unit+"/cpu-s")
	}
}
