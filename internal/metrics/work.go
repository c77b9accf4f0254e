package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/electd/electd/internal/election"
)

// workCollector exports the election's cumulative ZooKeeper work, read at
// scrape time. An election that has settled costs ZooKeeper nothing but
// its lease renewals and pings, so these counters stay flat while nothing
// changes; a steady rise with nothing changing is a defect (the shipped
// alert ElectdElectionBusy watches for it).
type workCollector struct {
	src                func() election.Counters
	rechecks, requests *prometheus.Desc
}

// CountWork registers on reg the counters of src, an Elector's Counters:
// electd_election_rechecks_total and electd_zk_requests_total{op}.
func CountWork(reg prometheus.Registerer, path string, src func() election.Counters) {
	labels := prometheus.Labels{"election": path}
	reg.MustRegister(&workCollector{
		src: src,
		rechecks: prometheus.NewDesc(prometheus.BuildFQName(namespace, "election", "rechecks_total"),
			"Reads of the queue that decide whether this participant leads: one per change it "+
				"sees and one per reconnect; flat while nothing changes.", nil, labels),
		requests: prometheus.NewDesc(prometheus.BuildFQName(namespace, "zk", "requests_total"),
			"ZooKeeper requests the election sent, by op (read: getData, exists, getChildren; "+
				"write: create, delete, setACL); lease renewals and pings not included.",
			[]string{"op"}, labels),
	})
}

func (c *workCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rechecks
	ch <- c.requests
}

func (c *workCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.src()
	ch <- prometheus.MustNewConstMetric(c.rechecks, prometheus.CounterValue, float64(w.Rechecks))
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(w.Reads+w.Rechecks), "read")
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(w.Writes), "write")
}
