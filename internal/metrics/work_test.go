package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/electd/electd/internal/election"
)

func TestCountWork(t *testing.T) {
	reg := prometheus.NewRegistry()
	w := election.Counters{Rechecks: 3, Reads: 10, Writes: 2}
	CountWork(reg, "/e", func() election.Counters { return w })
	want := `
# HELP electd_election_rechecks_total Reads of the queue that decide whether this participant leads: one per change it sees and one per reconnect; flat while nothing changes.
# TYPE electd_election_rechecks_total counter
electd_election_rechecks_total{election="/e"} 3
# HELP electd_zk_requests_total ZooKeeper requests the election sent, by op (read: getData, exists, getChildren; write: create, delete, setACL); lease renewals and pings not included.
# TYPE electd_zk_requests_total counter
electd_zk_requests_total{election="/e",op="read"} 13
electd_zk_requests_total{election="/e",op="write"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	w.Rechecks++ // read at scrape time
	want = `
# HELP electd_election_rechecks_total Reads of the queue that decide whether this participant leads: one per change it sees and one per reconnect; flat while nothing changes.
# TYPE electd_election_rechecks_total counter
electd_election_rechecks_total{election="/e"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "electd_election_rechecks_total"); err != nil {
		t.Fatal(err)
	}
}
