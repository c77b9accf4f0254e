// Package metrics exports an election's state and counts to Prometheus.
//
// Gauges are computed at scrape time from a StatusSource, so a scrape sees
// the lease as it is at that instant; counters are fed by the election
// package through the Recorder and SessionRecorder hooks. Every metric of
// electd is built here, on the registry main passes in; the packages that
// record them get only their recorder (a small interface or a func).
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/kube"
)

const namespace = "electd"

// StatusSource is the narrow view of an election the gauges read.
// *election.Elector satisfies it.
type StatusSource interface {
	Status() election.Status
}

// BuildInfo labels electd_build_info.
type BuildInfo struct {
	Version   string
	Commit    string
	GoVersion string
}

// lossReasons are the label values of electd_leadership_lost_total, all
// exported from the start so rate() works before the first loss.
var lossReasons = []election.LossReason{
	election.LossReleased, election.LossTerm, election.LossSuspended,
	election.LossExpired, election.LossShutdown, election.LossWithdrawn, election.LossAppUnhealthy,
}

// states are the label values of electd_zk_state.
var states = []zksession.State{
	zksession.StateConnecting, zksession.StateConnected, zksession.StateSuspended,
	zksession.StateExpired, zksession.StateClosed,
}

// NewRegistry is a daemon's own registry, never the global one, with the
// Go runtime's and the process's collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg's metrics: GET /metrics.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// Metrics holds the counters. It implements election.Recorder and
// zksession.Recorder; its methods never block.
type Metrics struct {
	acquired      prometheus.Counter
	lost          *prometheus.CounterVec
	leaderChanges prometheus.Counter
	duplicateIDs  prometheus.Counter
	expirations   prometheus.Counter
	reconnects    prometheus.Counter
	renewals      prometheus.Histogram
	kubeFailures  *prometheus.CounterVec
	gateWrites    *prometheus.CounterVec
}

var (
	_ election.Recorder  = (*Metrics)(nil)
	_ zksession.Recorder = (*Metrics)(nil)
	_ kube.GateRecorder  = (*Metrics)(nil)
)

// New registers electd's counters on reg, with the const label
// election=<path>, and returns them for the election to record to; the
// gauges read from the election come with CollectStatus once it exists.
func New(reg prometheus.Registerer, path string, info BuildInfo) *Metrics {
	labels := prometheus.Labels{"election": path}
	f := promauto.With(reg)
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels}
	}
	m := &Metrics{
		acquired: f.NewCounter(opts("leadership_acquired_total",
			"Times this participant became leader.")),
		lost: f.NewCounterVec(opts("leadership_lost_total",
			"Times this participant stopped leading, by reason."), []string{"reason"}),
		leaderChanges: f.NewCounter(opts("leader_changes_total",
			"Leader changes this participant observed.")),
		duplicateIDs: f.NewCounter(opts("duplicate_ids_total",
			"Times several participants were seen with the same id.")),
		expirations: f.NewCounter(opts("zk_session_expirations_total",
			"ZooKeeper sessions that expired.")),
		reconnects: f.NewCounter(opts("zk_reconnects_total",
			"Reconnections to ZooKeeper within a live session.")),
	}
	m.renewals = f.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "lease_renewal_seconds", ConstLabels: labels,
		Help: "Round-trips of the sync requests that renew the lease (through the ZooKeeper leader); " +
			"a lease lapses when they approach the session timeout.",
		// 1 ms on loopback to seconds on a struggling ensemble, and up to a
		// tenth of the longest session timeout (10 m): the renewal interval,
		// which ElectdLeaseRenewalSlow compares the p99 with. Above the top
		// bucket histogram_quantile can only answer that bucket's bound.
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	})
	m.kubeFailures = f.NewCounterVec(opts("kube_call_failures_total",
		"Kubernetes API calls of the leader label and Lease mirror and the participant gate that failed, by operation."), []string{"op"})
	m.gateWrites = f.NewCounterVec(opts("participant_gate_writes_total",
		"Writes of the pod condition electd.io/participant: own (True on this pod) or lost (False on a lost participant's pod)."),
		[]string{"pod"})
	for _, r := range lossReasons {
		m.lost.WithLabelValues(string(r))
	}
	for _, op := range kube.Ops {
		m.kubeFailures.WithLabelValues(op)
	}
	m.gateWrites.WithLabelValues(gateOwn)
	m.gateWrites.WithLabelValues(gateLost)
	// Not client_golang's collectors/version: it labels <program>_build_info
	// with revision, branch, tags, goos and goarch from the globals of
	// prometheus/common/version (empty or "unknown" unless set at link time
	// there). the contract (docs/design/http-contract.md, "Metrics") is
	// electd_build_info{version,commit,
	// goversion}; adding commit as an extra label would leave a revision
	// that repeats it and labels that say nothing. This is that one gauge.
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info", ConstLabels: prometheus.Labels{
			"election": path, "version": info.Version, "commit": info.Commit, "goversion": info.GoVersion,
		},
		Help: "Always 1; the labels say which electd this is.",
	}, func() float64 { return 1 })
	return m
}

// CollectStatus registers on reg the gauges computed from src's Status,
// read once per scrape for all of them, so that they agree.
func CollectStatus(reg prometheus.Registerer, path string, src StatusSource) {
	reg.MustRegister(newStatusCollector(path, src))
}

// LeadershipAcquired implements election.Recorder.
func (m *Metrics) LeadershipAcquired() { m.acquired.Inc() }

// LeadershipLost implements election.Recorder.
func (m *Metrics) LeadershipLost(reason election.LossReason) {
	m.lost.WithLabelValues(string(reason)).Inc()
}

// LeaderChanged implements election.Recorder.
func (m *Metrics) LeaderChanged() { m.leaderChanges.Inc() }

// DuplicateID implements election.Recorder.
func (m *Metrics) DuplicateID(string) { m.duplicateIDs.Inc() }

// SessionExpired implements zksession.Recorder.
func (m *Metrics) SessionExpired() { m.expirations.Inc() }

// Reconnected implements zksession.Recorder.
func (m *Metrics) Reconnected() { m.reconnects.Inc() }

// KubeCallFailed implements kube.Recorder.
func (m *Metrics) KubeCallFailed(op string) { m.kubeFailures.WithLabelValues(op).Inc() }

// The pod label values of electd_participant_gate_writes_total.
const (
	gateOwn  = "own"
	gateLost = "lost"
)

// GateSet implements kube.GateRecorder.
func (m *Metrics) GateSet(own bool) {
	if own {
		m.gateWrites.WithLabelValues(gateOwn).Inc()
		return
	}
	m.gateWrites.WithLabelValues(gateLost).Inc()
}

// LeaseRenewed implements zksession.Recorder.
func (m *Metrics) LeaseRenewed(rtt time.Duration) { m.renewals.Observe(rtt.Seconds()) }
