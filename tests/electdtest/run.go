package electdtest

import (
	"bytes"
	"os/exec"
	"testing"
	"time"
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
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return Result{Status: ExitStatus(err), Stdout: o.String(), Stderr: e.String()}
	case <-time.After(runTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("electd %v did not exit within %v; stderr:\n%s", args, runTimeout, e.String())
		return Result{}
	}
}
