package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/electd/electd/internal/metrics"
)

// Stamped at build time:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse --short HEAD)"
var (
	version = "dev"
	commit  = "unknown"
)

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "electd %s (commit %s, %s)\n", version, commit, runtime.Version())
}

func buildInfo() metrics.BuildInfo {
	return metrics.BuildInfo{Version: version, Commit: commit, GoVersion: runtime.Version()}
}
