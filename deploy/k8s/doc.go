// Package k8s holds electd's example Kubernetes manifests and the tests that
// keep them honest: every manifest decodes strictly into the Kubernetes API
// types, probes hit real electd endpoints, every ELECTD_* variable names a
// real configuration key, the rollout strategy and disruption budget work
// with followers that are unready by design, no Secret is shipped (the
// admin token and the ZooKeeper credentials are the operator's, referred
// to as docs/design/session-and-faults.md's "Threat model" needs), and the NetworkPolicies
// admit what it says. The label flavour in ../k8s-label (a kustomize
// overlay of this directory: every pod Ready, the leader found by its
// label) and the proxy flavour in ../k8s-proxy (every pod Ready, the
// Service at electd's forwarding proxy, which sends traffic to the leader)
// are rendered with kustomize and held to the same checks plus their own;
// every flavour passes a real kube-apiserver's server-side dry run
// (tests/manifests). There is no Go API here: the strict decoder and
// kustomize are tests/manifesttest's.
package k8s
