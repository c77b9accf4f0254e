package daemon

import (
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
)

// A process that never reached ZooKeeper has nothing to delete: SIGTERM
// exits 0 at once instead of waiting out shutdown_timeout and exiting 1
// with "could not delete the own node" (issue 12).
func TestShutdownWithoutZooKeeperExitsAtOnce(t *testing.T) {
	addr := electdtest.MustFreeAddr(t)
	p := electdtest.StartArgs(t, "lonely", addr, []string{
		"--id", "lonely", "--zookeeper.servers", "127.0.0.1:1", "--election.path", "/nowhere",
		"--http.addr", addr, "--shutdown_timeout", "5m", "--log.format", "text",
	}, nil)
	wait.For(t, 30*time.Second, "the HTTP API", func() bool { code, _ := p.Fetch("/healthz"); return code == 200 })
	p.Send(syscall.SIGTERM)
	// Far below shutdown_timeout: only waiting it out would take longer.
	if err := p.WaitExit(time.Minute); err != nil {
		t.Fatalf("exit: %v (want status 0)", err)
	}
	if p.LogHas("could not delete") {
		t.Error("logged that it could not delete a node it never had")
	}
}
