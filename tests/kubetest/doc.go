// Package kubetest runs a real Kubernetes API server for electd's tests:
// Debian's etcd (package etcd-server) as storage and kube-apiserver built
// from the Kubernetes module, on loopback ports, with RBAC, a static admin
// token and service-account tokens signed by a key pair made at start.
//
// kube-apiserver is built from the nested module in apiserver/ (its own
// go.mod: Kubernetes never enters electd's go.mod, and `go test ./...`
// does not match it). The first build on a machine takes about 7 minutes
// and 2 GB of memory; the binary is cached under CacheRoot
// (~/.cache/electd/kube-apiserver/<key>/kube-apiserver, key = hash of the
// module's files and the Go version) and reused afterwards. A lock file
// serializes builds of test binaries started together. CI builds it
// before the tests: go run ./tests/kubetest/prebuild.
//
// Start skips under -short. Otherwise a missing etcd or a failed build
// fails the test, naming what to install: never a skip.
package kubetest
