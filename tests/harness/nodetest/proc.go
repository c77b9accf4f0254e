package nodetest

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/electd/electd/tests/harness/proctest"
)

// process is one component of the node: its output goes to a log file.
type process struct {
	*proctest.Process
	name string
	log  string
}

// spawner starts every component through tests/harness/proctest's spawner, in a
// process group of its own: they get SIGKILL exactly when the test binary
// dies, so no control plane outlives it. Containers do (they belong to
// containerd's shims): the next run's cleanup removes them (cleanup.go).
type spawner struct{}

// startProcess starts cmd with its output appended to logPath.
func (spawner) startProcess(name, logPath string, cmd *exec.Cmd) (*process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := proctest.RunLogged(logPath, cmd)
	if err != nil {
		return nil, fmt.Errorf("nodetest: start %s: %w", name, err)
	}
	return &process{Process: p, name: name, log: logPath}, nil
}

func (p *process) exited() bool { return p.Exited() }

// stop sends SIGTERM, then SIGKILL to the process group after timeout.
func (p *process) stop(timeout time.Duration) {
	if p != nil {
		p.Stop(timeout)
	}
}

func (p *process) tail(n int) string { return p.Tail(n) }

func tail(s string, n int) string { return proctest.Tail(s, n) }
