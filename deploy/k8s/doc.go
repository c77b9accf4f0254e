// Package k8s holds electd's example Kubernetes manifests and the tests that
// keep them honest: every manifest decodes strictly into the Kubernetes API
// types, probes hit real electd endpoints, every ELECTD_* variable names a
// real configuration key, and the rollout strategy and disruption budget work
// with followers that are unready by design. The label flavour in
// ../k8s-label (a kustomize overlay of this directory: every pod Ready, the
// leader found by its label) is rendered with kustomize and held to the same
// checks plus its own; both flavours pass a real kube-apiserver's server-side
// dry run. Its one Go API is the strict decoder (decode.go), which the Helm
// chart's test (deploy/helm) shares.
package k8s
