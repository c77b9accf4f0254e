package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/electd/electd/tests/harness/zktest"
)

// env is what the sections share: the configuration, one standalone
// ZooKeeper, the electd binary and a work directory.
type env struct {
	cfg    Config
	dir    string
	electd string
	single *zktest.Ensemble
	out    io.Writer // progress lines
	// floorBin is tests/bench/floorproxy, built when first needed.
	floorBin string
}

func (e *env) progress(format string, args ...any) {
	if e.out != nil {
		fmt.Fprintf(e.out, time.Now().Format("15:04:05.000")+" "+format+"\n", args...)
	}
}

// electdOpts runs electd on the standalone server, logging at debug level
// (the timeline reads the debug lines).
func (e *env) electdOpts(path string, timeout time.Duration) electdOpts {
	return electdOpts{
		binary:         e.electd,
		dir:            e.dir,
		servers:        e.single.ConnectString(),
		path:           path,
		sessionTimeout: timeout,
		logLevel:       "debug",
	}
}

// buildGo builds the package pkg (an import path of this module) into
// dir/name with the go command, as a release would be built (static, no
// race detector): electd itself, and the forward section's floor
// (tests/bench/floorproxy).
func buildGo(dir, name, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}
