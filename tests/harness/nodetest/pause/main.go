// Command pause is the pod sandbox image of the node tests (tests/harness/nodetest):
// it holds the pod's namespaces and does nothing until SIGTERM or SIGINT,
// as Kubernetes' own pause does. Static, so the image needs no other file.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
}
