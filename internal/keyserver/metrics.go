package keyserver

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/veil-project/veil/internal/server"
)

// metrics are the server's Prometheus series, on a registry of its own.
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec   // transport, result
	evaluations *prometheus.CounterVec   // transport
	drops       *prometheus.CounterVec   // reason (UDP datagrams dropped unanswered)
	rejections  *prometheus.CounterVec   // transport, reason (answered with an error)
	latency     *prometheus.HistogramVec // transport
	sessions    prometheus.Gauge
	inFlight    prometheus.Gauge // queries between the rate limiter and their answer
}

func newMetrics() *metrics {
	m := &metrics{
		reg: server.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_ks_requests_total",
			Help: "Evaluation requests by transport and result."}, []string{"transport", "result"}),
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_ks_evaluations_total",
			Help: "Blinded inputs evaluated."}, []string{"transport"}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_ks_udp_drops_total",
			Help: "UDP datagrams dropped without an answer, by reason."}, []string{"reason"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_ks_rejections_total",
			Help: "Requests refused with an error answer, by reason."}, []string{"transport", "reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_ks_request_seconds",
			Help:    "Time to answer an evaluation request (including rate-limit delays).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"transport"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_ks_udp_sessions",
			Help: "Open UDP sessions."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_ks_queries_in_flight",
			Help: "Evaluation queries being processed: at the rate limiter (waiting out a delay) or being evaluated."}),
	}
	m.reg.MustRegister(m.requests, m.evaluations, m.drops, m.rejections, m.latency, m.sessions, m.inFlight)
	return m
}
