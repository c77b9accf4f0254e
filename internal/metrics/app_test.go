package metrics

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/electd/electd/internal/apphealth"
)

type fakeApp struct{ healthy atomic.Bool }

func (f *fakeApp) AppHealthy() bool { return f.healthy.Load() }

func TestAppMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := &fakeApp{}
	a := NewApp(reg, path)
	CollectApp(reg, path, src)
	a.AppHealthChecked(apphealth.Success)
	a.AppHealthChecked(apphealth.Timeout)
	a.AppHealthChecked(apphealth.Timeout)
	want := `
# HELP electd_app_health_checks_total Health checks of the application (app.health_url), by result: success (200-399), failure (another status), timeout, error (no answer).
# TYPE electd_app_health_checks_total counter
electd_app_health_checks_total{election="/services/web",result="error"} 0
electd_app_health_checks_total{election="/services/web",result="failure"} 0
electd_app_health_checks_total{election="/services/web",result="success"} 1
electd_app_health_checks_total{election="/services/web",result="timeout"} 2
# HELP electd_app_healthy 1 while the application passes its health checks, or without app.health_url; 0 while it fails them or before it passed one (this participant then does not stand).
# TYPE electd_app_healthy gauge
electd_app_healthy{election="/services/web"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "electd_app_health_checks_total", "electd_app_healthy"); err != nil {
		t.Fatal(err)
	}
	src.healthy.Store(true)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP electd_app_healthy 1 while the application passes its health checks, or without app.health_url; 0 while it fails them or before it passed one (this participant then does not stand).
# TYPE electd_app_healthy gauge
electd_app_healthy{election="/services/web"} 1
`), "electd_app_healthy"); err != nil {
		t.Fatal(err)
	}
}
