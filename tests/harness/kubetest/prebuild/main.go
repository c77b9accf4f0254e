// Command prebuild builds and caches the Kubernetes binaries that package
// kubetest and the node tests run (see kubetest.Build), so that CI pays the
// build before the tests start instead of inside one test's timeout. It
// prints the directory that holds them.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/electd/electd/tests/harness/kubetest"
)

func main() {
	start := time.Now()
	bins, err := kubetest.Build(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s (%v)\n", filepath.Dir(bins.APIServer), time.Since(start).Round(time.Second))
}
