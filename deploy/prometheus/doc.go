// Package prometheus holds electd's Prometheus alerting rules (rules.yaml)
// and the tests that keep them and the Grafana dashboard
// (deploy/grafana/electd.json) honest: the rules parse with Prometheus' own
// rule parser, the dashboard's queries with its PromQL parser, the README's
// alerts are the rules', and every metric either file queries exists, with
// the labels and label values it matches, on a real electd's /metrics.
// There is no Go API here.
package prometheus
