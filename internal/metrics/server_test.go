package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestServerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	open, dropped := 3, uint64(0)
	s := NewServer(reg, path)
	CollectServer(reg, path, func() int { return open }, func() uint64 { return dropped })
	s.ConnectionEvicted()
	s.ConnectionEvicted()
	NewAPI(reg, path).RequestRefused("streams")
	open, dropped = 7, 12
	want := `
# HELP electd_http_connections Open HTTP connections.
# TYPE electd_http_connections gauge
electd_http_connections{election="/services/web"} 7
# HELP electd_http_connections_evicted_total Idle or slow HTTP connections closed to make room for a new one at http.max_connections.
# TYPE electd_http_connections_evicted_total counter
electd_http_connections_evicted_total{election="/services/web"} 2
# HELP electd_http_requests_refused_total Requests answered 503 at a cap, by cap.
# TYPE electd_http_requests_refused_total counter
electd_http_requests_refused_total{election="/services/web",reason="participants"} 0
electd_http_requests_refused_total{election="/services/web",reason="streams"} 1
electd_http_requests_refused_total{election="/services/web",reason="waiters"} 0
# HELP electd_log_lines_dropped_total Log lines dropped because stderr was not read fast enough, or was closed.
# TYPE electd_log_lines_dropped_total counter
electd_log_lines_dropped_total{election="/services/web"} 12
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
