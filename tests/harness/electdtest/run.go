package electdtest

import (
	"bytes"
	"os/exec"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/proctest"
)

// runTimeout bounds Run: electd that has nothing to serve exits at once, so this only
// stops a hang.
const runTimeout = time.Minute

// Result is what a run to completion printed and returned.
type Result struct {
	Status         int
	Stdout, Stderr string
}

// Run runs electd (Binary(t)) with args and env (on top of CleanEnviron) to completion,
// failing t if it has not exited within a minute.
func Run(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(CleanEnviron(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	p, err := proctest.Run(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
		return Result{Status: ExitStatus(p.Err()), Stdout: o.String(), Stderr: e.String()}
	case <-time.After(runTimeout):
		_ = cmd.Process.Kill()
		<-p.Done()
		t.Fatalf("electd %v did not exit within %v; stderr:\n%s", args, runTimeout, e.String())
		return Result{}
	}
}

// Outcome is r's status, stdout and stderr.
func (r Result) Outcome() (status int, stdout, stderr string) { return r.Status, r.Stdout, r.Stderr }
