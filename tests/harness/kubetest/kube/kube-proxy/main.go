// Command kube-proxy is Kubernetes' kube-proxy, built from the module at the version
// ../go.mod pins (see package kubetest, which builds every command of this
// module once per machine and caches the binaries).
package main

import (
	"github.com/electd/electd/tests/kubetest/kube/internal/kubemain"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	kubemain.Run(app.NewProxyCommand())
}
