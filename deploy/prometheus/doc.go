// Package prometheus holds electd's Prometheus alerting rules (rules.yaml),
// their unit tests in promtool's format (rules_test.yaml), and the tests that
// keep them and the Grafana dashboard (deploy/grafana/electd.json) honest:
// the rules parse with Prometheus' own rule parser, the dashboard's queries
// with its PromQL parser, the alerts of docs/alerts.md are the rules', every
// metric either file queries exists, with the labels and label values it
// matches, on a real electd's /metrics; promtool runs rules_test.yaml; and
// every change of one threshold, window, `for` or comparison of rules.yaml
// fails rules_test.yaml (mutation_test.go). tests/alerts fires each alert by
// its real fault in a real Prometheus and checks the dashboard's values.
// There is no Go API here.
package prometheus
