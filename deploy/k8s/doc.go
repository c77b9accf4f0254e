// Package k8s holds electd's example Kubernetes manifests and the tests that
// keep them honest: every manifest decodes strictly into the Kubernetes API
// types, probes hit real electd endpoints, every ELECTD_* variable names a
// real configuration key, and the rollout strategy and disruption budget work
// with followers that are unready by design. Its one Go API is the strict
// decoder (decode.go), which the Helm chart's test (deploy/helm) shares.
package k8s
