package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/electd/electd/internal/proxy"
)

type fakeProxy struct {
	held, open, peers int
	buffered          int64
}

func (f *fakeProxy) Held() int       { return f.held }
func (f *fakeProxy) Open() int       { return f.open }
func (f *fakeProxy) PeerConns() int  { return f.peers }
func (f *fakeProxy) Buffered() int64 { return f.buffered }

func TestProxyMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := &fakeProxy{}
	p := NewProxy(reg, path, src)
	p.Request(proxy.ResultOK)
	p.Request(proxy.ResultOK)
	p.Request(proxy.ResultNoLeader)
	p.Conn(proxy.ResultRefused)
	p.Forwarded(1)
	p.Forwarded(2)
	p.Forwarded(1)
	p.SteppedDown(proxy.StepDownTimeouts)
	p.Resent(proxy.ResendUnprocessed)
	p.Resent(proxy.ResendUnprocessed)
	p.Resent(proxy.ResendSafe)
	p.Attempt(proxy.TargetLeader)
	p.Attempt(proxy.TargetLeader)
	p.Attempt(proxy.TargetApp)
	p.ResendRefused(proxy.LimitBudget)
	p.Upstream(proxy.TargetApp, 300*time.Microsecond)
	p.Upstream(proxy.TargetLeader, 2*time.Millisecond)
	p.Held(40 * time.Millisecond)
	src.held, src.open, src.peers, src.buffered = 2, 9, 2, 4096

	if got := testutil.ToFloat64(p.requests.WithLabelValues("ok")); got != 2 {
		t.Fatalf("requests ok = %v, want 2", got)
	}
	want := `
# HELP electd_proxy_forwards_total Requests and connections sent to the leader's proxy, by hop: 1 from a follower, 2 re-forwarded by a proxy that no longer led when they arrived.
# TYPE electd_proxy_forwards_total counter
electd_proxy_forwards_total{election="/services/web",hop="1"} 2
electd_proxy_forwards_total{election="/services/web",hop="2"} 1
# HELP electd_proxy_held Requests and connections waiting for a leader now.
# TYPE electd_proxy_held gauge
electd_proxy_held{election="/services/web"} 2
# HELP electd_proxy_open_connections Open connections to the forwarding proxy, clients' and peers'.
# TYPE electd_proxy_open_connections gauge
electd_proxy_open_connections{election="/services/web"} 9
# HELP electd_proxy_peer_connections Connections the forwarding proxy holds open to the other participants' proxies (HTTP/2).
# TYPE electd_proxy_peer_connections gauge
electd_proxy_peer_connections{election="/services/web"} 2
# HELP electd_proxy_buffered_bytes Bytes of request bodies the forwarding proxy buffers now (at most proxy.buffer_total).
# TYPE electd_proxy_buffered_bytes gauge
electd_proxy_buffered_bytes{election="/services/web"} 4096
# HELP electd_proxy_step_downs_total Times the proxy asked the election to step down, by why: refused (the application refuses connections), timeouts (an answer timed out, then proxy.app_timeout_stepdown of the proxy's own checks of it failed in a row).
# TYPE electd_proxy_step_downs_total counter
electd_proxy_step_downs_total{election="/services/web",why="refused"} 0
electd_proxy_step_downs_total{election="/services/web",why="timeouts"} 1
# HELP electd_proxy_resends_total Requests sent again, by why: unprocessed (they provably reached no application), safe (an idempotent method or an Idempotency-Key, no answer relayed yet), unread_body (proxy.resend_unread_body).
# TYPE electd_proxy_resends_total counter
electd_proxy_resends_total{election="/services/web",why="safe"} 1
electd_proxy_resends_total{election="/services/web",why="unprocessed"} 2
electd_proxy_resends_total{election="/services/web",why="unread_body"} 0
# HELP electd_proxy_attempts_total Attempts to send a request or connection, by target: app (this participant leads) or leader (the leader's proxy); first attempts, re-sends and the probes of a failing route.
# TYPE electd_proxy_attempts_total counter
electd_proxy_attempts_total{election="/services/web",target="app"} 1
electd_proxy_attempts_total{election="/services/web",target="leader"} 2
# HELP electd_proxy_resends_refused_total Requests that could have been sent again but were answered instead, by limit: per_request (sent again twice already), budget (re-sends reached 20% of the requests in 10 s plus 10 a second), hold_time (the backoff would outlast the hold time).
# TYPE electd_proxy_resends_refused_total counter
electd_proxy_resends_refused_total{election="/services/web",limit="budget"} 1
electd_proxy_resends_refused_total{election="/services/web",limit="hold_time"} 0
electd_proxy_resends_refused_total{election="/services/web",limit="per_request"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"electd_proxy_forwards_total", "electd_proxy_held", "electd_proxy_open_connections", "electd_proxy_step_downs_total",
		"electd_proxy_peer_connections", "electd_proxy_buffered_bytes", "electd_proxy_resends_total",
		"electd_proxy_attempts_total", "electd_proxy_resends_refused_total"); err != nil {
		t.Fatal(err)
	}
	// Every result, target and hop is exported before it happens.
	for name, n := range map[string]int{
		"electd_proxy_requests_total":    len(proxy.RequestResults),
		"electd_proxy_connections_total": len(proxy.ConnResults),
		"electd_proxy_upstream_seconds":  len(proxy.Targets),
		"electd_proxy_held_seconds":      1,
	} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != n {
			t.Fatalf("%s: %d series (%v), want %d", name, got, err, n)
		}
	}
	if got := testutil.ToFloat64(p.conns.WithLabelValues("refused")); got != 1 {
		t.Fatalf("connections refused = %v, want 1", got)
	}
}
