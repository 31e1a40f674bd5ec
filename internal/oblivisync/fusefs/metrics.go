package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/veil-project/veil/internal/oblivisync"
)

// metrics serves /healthz and /metrics for a mount (off unless Config.MetricsAddr is set;
// bind it to loopback: pending-buffer sizes are local information the cloud must not see).
type metrics struct {
	epochs, synced           prometheus.Counter
	pendingBytes, pendingIno prometheus.Gauge
	duration                 prometheus.Histogram
	srv                      *http.Server
}

func startMetrics(addr string, log *slog.Logger) (*metrics, error) {
	reg := prometheus.NewRegistry()
	m := &metrics{
		epochs:       prometheus.NewCounter(prometheus.CounterOpts{Name: "veil_osync_epochs_total", Help: "Epochs synced by this writer."}),
		synced:       prometheus.NewCounter(prometheus.CounterOpts{Name: "veil_osync_synced_bytes_total", Help: "Pending payload bytes written to the backend."}),
		pendingBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_osync_pending_bytes", Help: "Payload bytes waiting in the buffer."}),
		pendingIno:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_osync_pending_inodes", Help: "Files and directories not yet visible to readers."}),
		duration:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_osync_epoch_seconds", Help: "Time to run one epoch.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
	}
	reg.MustRegister(m.epochs, m.synced, m.pendingBytes, m.pendingIno, m.duration)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	return m, nil
}

func (m *metrics) observe(r oblivisync.EpochReport) {
	if m == nil {
		return
	}
	m.epochs.Inc()
	m.synced.Add(float64(r.BytesSynced))
	m.pendingBytes.Set(float64(r.PendingBytes))
	m.pendingIno.Set(float64(r.PendingInodes))
	m.duration.Observe(r.Duration.Seconds())
}

func (m *metrics) stop() {
	if m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m.srv.Shutdown(ctx)
	}
}
