// Command kubelet is Kubernetes' kubelet, built from the module at the
// version ../go.mod pins (see package kubetest, which builds every command
// of this module once per machine and caches the binaries).
package main

import (
	"context"

	"github.com/electd/electd/tests/kubetest/kube/internal/kubemain"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	kubemain.Run(app.NewKubeletCommand(context.Background()))
}
