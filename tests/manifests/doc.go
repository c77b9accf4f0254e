// Package manifests tests what ships beside the binary with real parts:
// the Helm chart (deploy/helm/electd) through Helm's own code (tools/helm,
// built at test time): `helm lint --strict` and `helm template`, every
// rendered object decoded strictly into the Kubernetes API types, the
// default rendering equal to the kustomize manifests of deploy/k8s,
// routing: label equal to deploy/k8s-label and routing: proxy to
// deploy/k8s-proxy, the values for id, servers, path, mode, Secrets,
// routing, NetworkPolicies and resources landing where they should, the
// rendered environment and files accepted by the real electd's --validate,
// and bad values refused with a message that names them; and every
// kustomize flavour and chart rendering accepted by a real
// kube-apiserver's server-side dry run (tests/harness/kubetest). The checks of the
// manifests that need no process are deploy/k8s's own tests.
package manifests
