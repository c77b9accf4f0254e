// Package kubemain runs a Kubernetes component's command as upstream's
// main does, so that each command of this module is one line.
package kubemain

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream's main
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream's main
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream's main
)

// Run runs cmd and exits with its code.
func Run(cmd *cobra.Command) {
	os.Exit(cli.Run(cmd))
}
