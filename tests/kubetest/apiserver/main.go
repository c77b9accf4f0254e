// Command apiserver is kube-apiserver, built from the Kubernetes module at the version go.mod
// pins, for electd's tests (see package kubetest, which builds it once per machine and caches the
// binary). It lives in a module of its own so electd's go.mod, its builds and `go test ./...`
// never pull in Kubernetes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
