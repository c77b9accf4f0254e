package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/electd/electd/internal/proxy"
)

type fakeProxy struct{ held, open int }

func (f *fakeProxy) Held() int { return f.held }
func (f *fakeProxy) Open() int { return f.open }

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
	p.SteppedDown()
	p.Upstream(proxy.TargetApp, 300*time.Microsecond)
	p.Upstream(proxy.TargetLeader, 2*time.Millisecond)
	p.Held(40 * time.Millisecond)
	src.held, src.open = 2, 9

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
# HELP electd_proxy_step_downs_total Times the proxy asked the election to step down because the application refused connections.
# TYPE electd_proxy_step_downs_total counter
electd_proxy_step_downs_total{election="/services/web"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"electd_proxy_forwards_total", "electd_proxy_held", "electd_proxy_open_connections", "electd_proxy_step_downs_total"); err != nil {
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
