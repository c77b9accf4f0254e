// Package prometheus holds electd's Prometheus alerting rules (rules.yaml),
// their unit tests in promtool's format (rules_test.yaml), and the tests that
// keep them and the Grafana dashboard (deploy/grafana/electd.json) honest:
// the rules parse with Prometheus' own rule parser, the dashboard's queries
// with its PromQL parser, the alerts of docs/alerts.md are the rules', every
// metric either file queries exists, with the labels and label values it
// matches, on a real electd's /metrics; promtool runs rules_test.yaml; and a
// real Prometheus scraping real electd sidecars on a real ZooKeeper evaluates
// the rules through an outage and answers every query of the dashboard.
// There is no Go API here.
package prometheus
