package metrics

import "github.com/prometheus/client_golang/prometheus"

// statusCollector computes the gauges from one Status per scrape, so they
// agree with each other and with the lease at that instant.
type statusCollector struct {
	src StatusSource

	isLeader, participants, fencingToken, leaseRemaining *prometheus.Desc
	sessionTimeout, state, misconfigured, candidate      *prometheus.Desc
}

func newStatusCollector(path string, src StatusSource) *statusCollector {
	labels := prometheus.Labels{"election": path}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, variable, labels)
	}
	return &statusCollector{
		src: src,
		isLeader: desc("is_leader",
			"1 while this participant leads with a valid lease, checked at scrape time; else 0."),
		participants: desc("participants",
			"Participants in the election at the last read of the queue."),
		fencingToken: desc("fencing_token",
			"This participant's fencing token while it leads; 0 while it does not."),
		leaseRemaining: desc("lease_remaining_seconds",
			"How long the ZooKeeper session is certainly still alive on the ensemble."),
		sessionTimeout: desc("zk_session_timeout_seconds",
			"Negotiated ZooKeeper session timeout; 0 before the first session."),
		state: desc("zk_state",
			"1 for the current ZooKeeper connection state, 0 for the others.", "state"),
		misconfigured: desc("misconfigured",
			"1 while the election path holds nodes of another mode, so electd refuses to lead."),
		candidate: desc("candidate",
			"1 while this participant stands for leadership; 0 while it does not "+
				"(election.candidate: false, POST /candidacy, or an unhealthy application)."),
	}
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.isLeader, c.participants, c.fencingToken,
		c.leaseRemaining, c.sessionTimeout, c.state, c.misconfigured, c.candidate} {
		ch <- d
	}
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.isLeader, bool01(st.IsLeader))
	gauge(c.participants, float64(st.Participants))
	gauge(c.fencingToken, float64(st.FencingToken))
	gauge(c.leaseRemaining, max(st.LeaseRemaining.Seconds(), 0))
	gauge(c.sessionTimeout, st.SessionTimeout.Seconds())
	for _, s := range states {
		gauge(c.state, bool01(st.State == s), string(s))
	}
	gauge(c.misconfigured, bool01(st.Misconfigured != ""))
	gauge(c.candidate, bool01(st.Candidate))
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
