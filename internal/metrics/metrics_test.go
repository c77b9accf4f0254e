package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/election/zksession"
)

const path = "/services/web"

func setup(t *testing.T) (*prometheus.Registry, *electiontest.Fake, *Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	src := electiontest.New(election.Status{})
	m := New(reg, path, BuildInfo{Version: "1.2.3", Commit: "abc", GoVersion: "go1.26"})
	CollectStatus(reg, path, src)
	return reg, src, m
}

func TestGaugesFollowStatusAtScrapeTime(t *testing.T) {
	reg, src, _ := setup(t)
	src.Set(election.Status{
		IsLeader: true, FencingToken: 4294967302, LeaseRemaining: 2500 * time.Millisecond,
		SessionTimeout: 4 * time.Second, State: zksession.StateSuspended, Participants: 3,
	})
	want := `
# HELP electd_is_leader 1 while this participant leads with a valid lease, checked at scrape time; else 0.
# TYPE electd_is_leader gauge
electd_is_leader{election="/services/web"} 1
# HELP electd_participants Participants in the election at the last read of the queue.
# TYPE electd_participants gauge
electd_participants{election="/services/web"} 3
# HELP electd_fencing_token This participant's fencing token while it leads; 0 while it does not.
# TYPE electd_fencing_token gauge
electd_fencing_token{election="/services/web"} 4.294967302e+09
# HELP electd_lease_remaining_seconds How long the ZooKeeper session is certainly still alive on the ensemble.
# TYPE electd_lease_remaining_seconds gauge
electd_lease_remaining_seconds{election="/services/web"} 2.5
# HELP electd_zk_session_timeout_seconds Negotiated ZooKeeper session timeout; 0 before the first session.
# TYPE electd_zk_session_timeout_seconds gauge
electd_zk_session_timeout_seconds{election="/services/web"} 4
# HELP electd_zk_state 1 for the current ZooKeeper connection state, 0 for the others.
# TYPE electd_zk_state gauge
electd_zk_state{election="/services/web",state="closed"} 0
electd_zk_state{election="/services/web",state="connected"} 0
electd_zk_state{election="/services/web",state="connecting"} 0
electd_zk_state{election="/services/web",state="expired"} 0
electd_zk_state{election="/services/web",state="suspended"} 1
# HELP electd_misconfigured 1 while the election path holds nodes of another mode, so electd refuses to lead.
# TYPE electd_misconfigured gauge
electd_misconfigured{election="/services/web"} 0
`
	names := []string{"electd_is_leader", "electd_participants", "electd_fencing_token",
		"electd_lease_remaining_seconds", "electd_zk_session_timeout_seconds", "electd_zk_state", "electd_misconfigured"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}

	// The next scrape sees the next status: nothing is cached.
	src.Set(election.Status{State: zksession.StateConnected, LeaseRemaining: -time.Second, Misconfigured: "lock- nodes", Candidate: true})
	for name, want := range map[string]float64{
		"electd_is_leader": 0, "electd_fencing_token": 0, "electd_lease_remaining_seconds": 0, "electd_misconfigured": 1,
		"electd_candidate": 1,
	} {
		if got := gather(t, reg, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := gather(t, reg, "electd_zk_state", map[string]string{"state": "connected"}); got != 1 {
		t.Errorf(`electd_zk_state{state="connected"} = %v, want 1`, got)
	}
}

func TestCounters(t *testing.T) {
	reg, _, m := setup(t)
	for _, r := range []string{"released", "term", "suspended", "expired", "shutdown", "withdrawn", "app_unhealthy"} {
		if got := testutil.ToFloat64(m.lost.WithLabelValues(r)); got != 0 {
			t.Errorf("lost{reason=%q} starts at %v", r, got)
		}
	}
	if got, want := testutil.CollectAndCount(m.lost), 7; got != want {
		t.Errorf("electd_leadership_lost_total has %d series before any loss, want %d", got, want)
	}

	var rec election.Recorder = m
	var srec zksession.Recorder = m
	rec.LeadershipAcquired()
	rec.LeadershipAcquired()
	rec.LeadershipLost(election.LossTerm)
	rec.LeaderChanged()
	rec.DuplicateID("web-1")
	srec.SessionExpired()
	srec.Reconnected()
	srec.Reconnected()

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"electd_leadership_acquired_total", nil, 2},
		{"electd_leadership_lost_total", map[string]string{"reason": "term"}, 1},
		{"electd_leadership_lost_total", map[string]string{"reason": "released"}, 0},
		{"electd_leader_changes_total", nil, 1},
		{"electd_duplicate_ids_total", nil, 1},
		{"electd_zk_session_expirations_total", nil, 1},
		{"electd_zk_reconnects_total", nil, 2},
	} {
		if got := gather(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestBuildInfo(t *testing.T) {
	reg, _, _ := setup(t)
	want := `
# HELP electd_build_info Always 1; the labels say which electd this is.
# TYPE electd_build_info gauge
electd_build_info{commit="abc",election="/services/web",goversion="go1.26",version="1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "electd_build_info"); err != nil {
		t.Fatal(err)
	}
}

func TestEveryDesignMetricIsRegistered(t *testing.T) {
	reg, _, _ := setup(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
		for _, m := range mf.GetMetric() {
			if !hasLabel(m.GetLabel(), "election", path) {
				t.Errorf("%s lacks election=%q", mf.GetName(), path)
			}
		}
	}
	for _, name := range []string{
		"electd_is_leader", "electd_leadership_acquired_total", "electd_leadership_lost_total",
		"electd_leader_changes_total", "electd_participants", "electd_fencing_token",
		"electd_lease_remaining_seconds", "electd_zk_session_timeout_seconds", "electd_zk_state",
		"electd_zk_session_expirations_total", "electd_zk_reconnects_total", "electd_build_info",
		"electd_duplicate_ids_total", "electd_misconfigured", "electd_candidate",
	} {
		if !got[name] {
			t.Errorf("%s is not exported", name)
		}
	}
}

// The gauges are read from the election at scrape time, however late it
// came after the counters it records to.
func TestCollectStatusLate(t *testing.T) {
	reg := prometheus.NewRegistry()
	New(reg, path, BuildInfo{})
	src := electiontest.New(election.Status{})
	CollectStatus(reg, path, src)
	src.Set(election.Status{IsLeader: true})
	if got := gather(t, reg, "electd_is_leader", nil); got != 1 {
		t.Fatalf("electd_is_leader = %v, want 1", got)
	}
}

// gather scrapes reg and returns the value of the one series of name whose
// labels include labels.
func gather(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				if !hasLabel(m.GetLabel(), k, v) {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func hasLabel(ls []*dto.LabelPair, name, value string) bool {
	for _, l := range ls {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

func TestLeaseRenewalHistogram(t *testing.T) {
	reg, _, m := setup(t)
	var srec zksession.Recorder = m
	srec.LeaseRenewed(3 * time.Millisecond)
	srec.LeaseRenewed(300 * time.Millisecond)
	want := `
# HELP electd_lease_renewal_seconds Round-trips of the sync requests that renew the lease (through the ZooKeeper leader); a lease lapses when they approach the session timeout.
# TYPE electd_lease_renewal_seconds histogram
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.001"} 0
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.0025"} 0
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.005"} 1
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.01"} 1
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.025"} 1
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.05"} 1
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.1"} 1
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.25"} 1
electd_lease_renewal_seconds_bucket{election="/services/web",le="0.5"} 2
electd_lease_renewal_seconds_bucket{election="/services/web",le="1"} 2
electd_lease_renewal_seconds_bucket{election="/services/web",le="2.5"} 2
electd_lease_renewal_seconds_bucket{election="/services/web",le="5"} 2
electd_lease_renewal_seconds_bucket{election="/services/web",le="10"} 2
electd_lease_renewal_seconds_bucket{election="/services/web",le="30"} 2
electd_lease_renewal_seconds_bucket{election="/services/web",le="60"} 2
electd_lease_renewal_seconds_bucket{election="/services/web",le="+Inf"} 2
electd_lease_renewal_seconds_sum{election="/services/web"} 0.303
electd_lease_renewal_seconds_count{election="/services/web"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "electd_lease_renewal_seconds"); err != nil {
		t.Fatal(err)
	}
}

// ElectdLeaseRenewalSlow (deploy/prometheus/rules.yaml) fires when the p99
// renewal reaches a tenth of the session timeout. histogram_quantile never
// answers more than the top finite bucket's bound, so that bound must reach
// a tenth of the longest session timeout electd accepts, or the alert could
// never fire for it.
func TestRenewalBucketsReachTheAlertThreshold(t *testing.T) {
	reg, _, m := setup(t)
	m.LeaseRenewed(time.Millisecond)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	top := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "electd_lease_renewal_seconds" {
			continue
		}
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			top = max(top, b.GetUpperBound()) // +Inf is not in the list
		}
	}
	if want := 0.1 * zksession.MaxSessionTimeout.Seconds(); top < want {
		t.Errorf("top bucket %gs, want at least %gs (a tenth of the longest session timeout)", top, want)
	}
}

// The daemon's registry carries the Go runtime's and the process's
// metrics (the dashboard's memory and CPU panels read them), and serves
// them on Handler.
func TestRegistryServesRuntimeMetrics(t *testing.T) {
	reg := NewRegistry()
	New(reg, path, BuildInfo{Version: "1", Commit: "c", GoVersion: "go"})
	rec := httptest.NewRecorder()
	Handler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{"go_goroutines ", "process_resident_memory_bytes ", "electd_build_info{"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
}
