// Command prebuild builds and caches the kube-apiserver that package
// kubetest runs (see its documentation), so that CI pays the build before
// the tests start instead of inside one test's timeout. It prints the
// binary's path.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/electd/electd/tests/kubetest"
)

func main() {
	start := time.Now()
	bin, err := kubetest.APIServer(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s (%v)\n", bin, time.Since(start).Round(time.Second))
}
