package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/electd/electd/internal/proxy"
)

// ProxySource is read at scrape time for the forwarding proxy's gauges.
// *proxy.Proxy satisfies it.
type ProxySource interface {
	// Held counts the requests and connections waiting for a leader now.
	Held() int
	// Open counts the proxy's open connections, clients' and peers'.
	Open() int
	// PeerConns counts the connections it holds to other proxies.
	PeerConns() int
	// Buffered is the bytes of request bodies it buffers now.
	Buffered() int64
}

// Proxy counts what the forwarding proxy did (docs/design/proxy.md,
// "Forwarding"); it implements proxy.Recorder and never blocks.
type Proxy struct {
	requests  *prometheus.CounterVec
	conns     *prometheus.CounterVec
	forwards  *prometheus.CounterVec
	upstream  *prometheus.HistogramVec
	held      prometheus.Histogram
	stepDowns *prometheus.CounterVec
	resends   *prometheus.CounterVec
	attempts  *prometheus.CounterVec
	refused   *prometheus.CounterVec
}

var _ proxy.Recorder = (*Proxy)(nil)

// NewProxy registers the proxy's metrics on reg with election=<path>.
// Every label value is exported from the start, so that rate() works
// before the first of each happens.
func NewProxy(reg prometheus.Registerer, path string, src ProxySource) *Proxy {
	labels := prometheus.Labels{"election": path}
	f := promauto.With(reg)
	counter := func(name, help string, variable ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels}, variable)
	}
	p := &Proxy{
		requests: counter("proxy_requests_total",
			"HTTP requests through the forwarding proxy, by how they ended: ok (the application's or the leader proxy's answer "+
				"relayed), no_leader (503 after the hold time), app_busy (503 after the hold time: the application had "+
				"proxy.app_max_in_flight requests throughout), held_cap, bad_request, upstream_error, timeout, "+
				"leadership_lost (cut when this participant stopped leading), bounced (a peer's forward for a leadership this "+
				"participant is not: sent back to be routed again), canceled, shutdown, maybe_processed (503 or 502: it may "+
				"have reached an application and cannot be sent again), client_timeout (408: headers or a buffered body too "+
				"slow), evicted (closed: its body came slowest at the connection cap), misdirected (the leader's proxy takes "+
				"part in another election).", "result"),
		conns: counter("proxy_connections_total",
			"Connections to the forwarding proxy, by how they ended (HTTP mode counts only refused and evicted ones).", "result"),
		forwards: counter("proxy_forwards_total",
			"Requests and connections sent to the leader's proxy, by hop: 1 from a follower, 2 re-forwarded by a proxy "+
				"that no longer led when they arrived.", "hop"),
		stepDowns: counter("proxy_step_downs_total",
			"Times the proxy asked the election to step down, by why: refused (the application refuses connections), "+
				"timeouts (an answer timed out, then proxy.app_timeout_stepdown of the proxy's own checks of it failed in a row).", "why"),
		resends: counter("proxy_resends_total",
			"Requests sent again, by why: unprocessed (they provably reached no application), safe (an idempotent method "+
				"or an Idempotency-Key, no answer relayed yet), unread_body (proxy.resend_unread_body).", "why"),
		attempts: counter("proxy_attempts_total",
			"Attempts to send a request or connection, by target: app (this participant leads) or leader (the leader's "+
				"proxy); first attempts, re-sends and the probes of a failing route.", "target"),
		refused: counter("proxy_resends_refused_total",
			"Requests that could have been sent again but were answered instead, by limit: per_request (sent again twice "+
				"already), budget (re-sends reached 20% of the requests in 10 s plus 10 a second), hold_time (the backoff "+
				"would outlast the hold time).", "limit"),
	}
	p.upstream = f.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "proxy_upstream_seconds", ConstLabels: labels,
		Help: "Time to the response headers (HTTP) or to connect (TCP), by target: app (this participant leads) or " +
			"leader (the leader's proxy; its application's time included).",
		// From a loopback forward (tens of microseconds) to ResponseTimeout.
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"target"})
	p.held = f.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "proxy_held_seconds", ConstLabels: labels,
		Help: "How long requests and connections waited for a leader, for those that waited (a hand-over's own " +
			"time, or the hold time for those answered 503).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	})
	for _, r := range proxy.RequestResults {
		p.requests.WithLabelValues(string(r))
	}
	for _, r := range proxy.ConnResults {
		p.conns.WithLabelValues(string(r))
	}
	for hop := 1; hop <= 2; hop++ {
		p.forwards.WithLabelValues(strconv.Itoa(hop))
	}
	for _, why := range proxy.StepDowns {
		p.stepDowns.WithLabelValues(why)
	}
	for _, why := range proxy.Resends {
		p.resends.WithLabelValues(string(why))
	}
	for _, t := range proxy.Targets {
		p.upstream.WithLabelValues(string(t))
		p.attempts.WithLabelValues(string(t))
	}
	for _, l := range proxy.Limits {
		p.refused.WithLabelValues(string(l))
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "proxy_held", ConstLabels: labels,
		Help: "Requests and connections waiting for a leader now."}, func() float64 { return float64(src.Held()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "proxy_open_connections", ConstLabels: labels,
		Help: "Open connections to the forwarding proxy, clients' and peers'."}, func() float64 { return float64(src.Open()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "proxy_peer_connections", ConstLabels: labels,
		Help: "Connections the forwarding proxy holds open to the other participants' proxies (HTTP/2)."},
		func() float64 { return float64(src.PeerConns()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "proxy_buffered_bytes", ConstLabels: labels,
		Help: "Bytes of request bodies the forwarding proxy buffers now (at most proxy.buffer_total)."},
		func() float64 { return float64(src.Buffered()) })
	return p
}

// Request implements proxy.Recorder.
func (p *Proxy) Request(res proxy.Result) { p.requests.WithLabelValues(string(res)).Inc() }

// Conn implements proxy.Recorder.
func (p *Proxy) Conn(res proxy.Result) { p.conns.WithLabelValues(string(res)).Inc() }

// Forwarded implements proxy.Recorder.
func (p *Proxy) Forwarded(hop int) { p.forwards.WithLabelValues(strconv.Itoa(hop)).Inc() }

// Upstream implements proxy.Recorder.
func (p *Proxy) Upstream(to proxy.Target, d time.Duration) {
	p.upstream.WithLabelValues(string(to)).Observe(d.Seconds())
}

// Held implements proxy.Recorder.
func (p *Proxy) Held(d time.Duration) { p.held.Observe(d.Seconds()) }

// SteppedDown implements proxy.Recorder.
func (p *Proxy) SteppedDown(why string) { p.stepDowns.WithLabelValues(why).Inc() }

// Resent implements proxy.Recorder.
func (p *Proxy) Resent(why proxy.Resend) { p.resends.WithLabelValues(string(why)).Inc() }

// Attempt implements proxy.Recorder.
func (p *Proxy) Attempt(to proxy.Target) { p.attempts.WithLabelValues(string(to)).Inc() }

// ResendRefused implements proxy.Recorder.
func (p *Proxy) ResendRefused(l proxy.Limit) { p.refused.WithLabelValues(string(l)).Inc() }
