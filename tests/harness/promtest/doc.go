// Package promtest runs a real Prometheus server for tests: the one the
// alert rules and the Grafana dashboard are checked against.
//
// It uses the `prometheus` in PATH (Debian's package: apt-get install
// prometheus, which scripts/install-deps.sh installs; 2.42 or later). A
// missing binary fails the test with what to install; only -short mode,
// which runs the unit tests alone, skips it (Binary: the one place that
// decides).
//
//	p := promtest.Start(t, promtest.Options{Targets: addrs, RuleFiles: []string{rules}})
//	alerts, err := p.API.Alerts(ctx)
//
// Start writes a configuration that scrapes Targets at /metrics as job
// "electd" and evaluates RuleFiles, both every Options.Interval (1 s by
// default), runs the server on a free loopback port with its data in a
// temporary directory, and waits until it answers /-/ready. SetTargets adds
// and removes targets of that job while it runs (file-based discovery), so
// that tests can share one server. API is client_golang's client of the
// HTTP API (/api/v1/alerts, query, query_range, ...). The server is stopped
// when the test ends (SIGTERM, then SIGKILL), on Linux also if the test
// binary dies (PR_SET_PDEATHSIG), and its log is printed when the test
// failed.
//
// SpeedUp writes a copy of a rules file with every range window and `for`
// divided, for a server evaluating it every second; LoadDashboard and
// Expand read a Grafana dashboard's queries and interpolate them as Grafana
// sends them.
package promtest
