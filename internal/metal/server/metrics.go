package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/veil-project/veil/internal/server"
)

type metrics struct {
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
	peerUp  prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{reg: server.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_metal_calls_total",
			Help: "Metal calls by kind (account, access) and result (ok, missing, error)."}, []string{"kind", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_metal_call_seconds",
			Help: "Duration of Metal calls (2PC and DataORAM work).", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, []string{"kind"}),
		peerUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_metal_peer_up", Help: "Whether the 2PC link to the other server is up (0 or 1)."}),
	}
	m.reg.MustRegister(m.calls, m.seconds, m.peerUp)
	return m
}
