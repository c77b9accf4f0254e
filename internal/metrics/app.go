package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/electd/electd/internal/apphealth"
)

// AppSource is read at scrape time for electd_app_healthy
// (docs/design/handover.md, "Application health").
// electd_candidate is the status collector's (Status.Candidate).
type AppSource interface {
	// AppHealthy is false while the application fails its checks or has
	// not passed one yet; true without app.health_url.
	AppHealthy() bool
}

// App counts application health checks; it implements apphealth.Recorder.
type App struct {
	checks *prometheus.CounterVec
}

var _ apphealth.Recorder = (*App)(nil)

// NewApp registers electd_app_healthy and
// electd_app_health_checks_total on reg, with the const label
// election=<path>. Every result is exported from the start, so rate()
// works before the first failure.
func NewApp(reg prometheus.Registerer, path string, src AppSource) *App {
	labels := prometheus.Labels{"election": path}
	f := promauto.With(reg)
	a := &App{checks: f.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "app_health_checks_total", ConstLabels: labels,
		Help: "Health checks of the application (app.health_url), by result: success (200-399), " +
			"failure (another status), timeout, error (no answer).",
	}, []string{"result"})}
	for _, r := range apphealth.Results {
		a.checks.WithLabelValues(string(r))
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "app_healthy", ConstLabels: labels,
		Help: "1 while the application passes its health checks, or without app.health_url; " +
			"0 while it fails them or before it passed one (this participant then does not stand).",
	}, func() float64 { return bool01(src.AppHealthy()) })
	return a
}

// AppHealthChecked implements apphealth.Recorder.
func (a *App) AppHealthChecked(r apphealth.Result) {
	a.checks.WithLabelValues(string(r)).Inc()
}
