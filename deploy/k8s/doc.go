// Package k8s holds electd's example Kubernetes manifests and the tests that
// keep them honest: every manifest decodes strictly into the Kubernetes API
// types, probes hit real electd endpoints, every ELECTD_* variable names a
// real configuration key, and the rollout strategy and disruption budget work
// with followers that are unready by design. There is no Go API here.
package k8s
