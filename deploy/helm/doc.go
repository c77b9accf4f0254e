// Package helm holds electd's Helm chart (electd/) and the tests that keep it
// honest: `helm lint --strict` and `helm template` from Helm's own code
// (tools/helm, built at test time), every rendered object decoded strictly
// into the Kubernetes API types, the default rendering equal to the
// kustomize manifests of deploy/k8s, routing: label equal to those of
// deploy/k8s-label and routing: proxy to those of deploy/k8s-proxy, the values for id, servers, path, mode, Secrets,
// routing, NetworkPolicies and resources landing where they should, every
// rendering accepted by a real kube-apiserver's server-side dry run, the
// rendered environment and files accepted by the real electd's --validate,
// and bad values refused with a message that names them. There is no Go
// API here.
package helm
