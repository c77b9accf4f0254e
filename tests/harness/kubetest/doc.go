// Package kubetest builds the Kubernetes binaries electd's tests run and
// runs a real Kubernetes API server for them: Debian's etcd (package
// etcd-server) as storage and kube-apiserver built from the Kubernetes
// module, on loopback ports, with RBAC, a static admin token and
// service-account tokens signed by a key pair made at start. The node tests
// (tests/harness/nodetest) run the other binaries Build returns.
//
// Every binary is built from the nested module in kube/ (its own go.mod:
// Kubernetes never enters electd's go.mod, and `go test ./...` does not
// match it): kube-apiserver, kube-controller-manager, kube-scheduler,
// kubelet, kube-proxy and kubectl, stamped with the version the module
// pins, plus lease-sidecar, the client-go elector the node tests compare
// electd with. The first build on a machine takes about 20 minutes and
// 2 GB of memory; the binaries are cached under CacheRoot
// (~/.cache/electd/kube/<key>/, key = hash of the module's files and the Go
// version) and reused afterwards. A lock file serializes builds of test
// binaries started together. CI builds them before the tests: go run
// ./tests/harness/kubetest/prebuild.
//
// Start skips under -short. Otherwise a missing etcd or a failed build
// fails the test, naming what to install: never a skip.
package kubetest
