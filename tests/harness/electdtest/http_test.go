package electdtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeProc is a Proc whose HTTP API is h.
func fakeProc(t *testing.T, h http.Handler) *Proc {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Proc{Name: "fake", Addr: strings.TrimPrefix(srv.URL, "http://"), client: srv.Client()}
}

const metricsText = `# HELP electd_is_leader 1 if this participant leads.
# TYPE electd_is_leader gauge
electd_is_leader{election="/x"} 1
# HELP electd_zk_session_timeout_seconds Negotiated session timeout.
# TYPE electd_zk_session_timeout_seconds gauge
electd_zk_session_timeout_seconds 4
# HELP electd_zk_state 1 for the current state.
# TYPE electd_zk_state gauge
electd_zk_state{state="connected"} 1
electd_zk_state{state="suspended"} 0
# HELP electd_leadership_lost_total Losses.
# TYPE electd_leadership_lost_total counter
electd_leadership_lost_total{reason="released"} 2
electd_leadership_lost_total{reason="term"} 3
# HELP electd_lease_renewal_seconds Renewals.
# TYPE electd_lease_renewal_seconds histogram
electd_lease_renewal_seconds_bucket{le="0.1"} 1
electd_lease_renewal_seconds_bucket{le="+Inf"} 1
electd_lease_renewal_seconds_sum 0.01
electd_lease_renewal_seconds_count 1
`

func TestMetrics(t *testing.T) {
	p := fakeProc(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(metricsText))
	}))
	ctx := context.Background()
	for name, want := range map[string]float64{
		"electd_is_leader":             1,
		"electd_leadership_lost_total": 5, // summed over its series
		"electd_zk_state":              1,
	} {
		if got, err := p.Metric(ctx, name); err != nil || got != want {
			t.Errorf("Metric(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := p.Metric(ctx, "electd_lease_renewal_seconds"); err == nil {
		t.Error("Metric of a histogram returned no error")
	}
	if _, err := p.Metric(ctx, "electd_nope"); err == nil {
		t.Error("Metric of an absent metric returned no error")
	}
	if got := p.SessionTimeout(ctx); got != 4*time.Second {
		t.Errorf("SessionTimeout = %v, want 4s", got)
	}
}

func TestMetricsRejectsGarbage(t *testing.T) {
	p := fakeProc(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("electd_is_leader{election=\"/x\" 1\n"))
	}))
	if _, err := p.Metrics(context.Background()); err == nil {
		t.Error("a malformed exposition parsed")
	}
}

func TestViews(t *testing.T) {
	p := fakeProc(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/leader":
			w.Write([]byte(`{"leader":{"id":"a","advertise":"h:1","node":"n1","session":"0x1f","fencing_token":7},"self":{"id":"b","is_leader":false,"state":"connected"},"mode":"latch","path":"/x"}`))
		case "/participants":
			w.Write([]byte(`[{"id":"a","node":"n1","session":"0x1f","fencing_token":7,"is_leader":true},{"id":"b","node":null,"session":"0x20","fencing_token":null,"is_leader":false}]`))
		case "/healthz/leader":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"is_leader":false,"reason":"follower","lease_remaining_ms":0,"fencing_token":null}`))
		default:
			http.NotFound(w, r)
		}
	}))
	ctx := context.Background()
	v, err := p.View(ctx)
	if err != nil || v.LeaderID() != "a" || SessionID(v.Leader.Session) != 0x1f || v.Leader.FencingToken != 7 || v.Self.ID != "b" {
		t.Errorf("View = %+v, %v", v, err)
	}
	ps, err := p.Participants(ctx)
	if err != nil || len(ps) != 2 || !ps[0].IsLeader || ps[1].Node != nil {
		t.Errorf("Participants = %+v, %v", ps, err)
	}
	h, err := p.LeaderHealth(ctx)
	if err != nil || h.Status != 503 || h.IsLeader || h.Reason != "follower" {
		t.Errorf("LeaderHealth = %+v, %v", h, err)
	}
	if p.IsLeader(ctx) {
		t.Error("IsLeader on a 503")
	}
	if err := p.getJSON(ctx, "/nope", new(any)); err == nil {
		t.Error("a 404 read as JSON without an error")
	}
}
