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
	// Server 2: Server 1's messages on the link (announce, query, ping), the cost of pairing
	linkMsgs *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{reg: server.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_metal_calls_total",
			Help: "Metal calls by kind (account, access) and result (ok, missing, error)."}, []string{"kind", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_metal_call_seconds",
			Help: "Duration of Metal calls (2PC and DataORAM work).", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, []string{"kind"}),
		peerUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_metal_peer_up", Help: "Whether the 2PC link to the other server is up (0 or 1)."}),
		linkMsgs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_metal_link_messages_total",
			Help: "Server 2: Server 1's messages on the 2PC link outside calls: announce (one id), query (all waiting ids), ping."}, []string{"message"}),
	}
	m.reg.MustRegister(m.calls, m.seconds, m.peerUp, m.linkMsgs)
	return m
}
