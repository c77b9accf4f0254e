package handoff_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

const (
	// sessionTimeout is what a successor would wait for the old leader's
	// node if the old leader left it behind: its session's expiry.
	sessionTimeout = 15 * time.Second
	// handoffBound is how soon after SIGTERM the successor must lead. The
	// design (docs/design/session-and-faults.md, "Failure semantics") takes a few round-trips:
	// the refused delete, the session's close (ZooKeeper deletes the node
	// with it), the successor's watch and its re-check, each about a
	// millisecond on loopback. The bound leaves three orders of magnitude
	// of slack for a loaded machine, and is a third of what waiting for the
	// session to expire would take, so that it still tells the two apart.
	handoffBound = sessionTimeout / 3
)

// A leader whose node ZooKeeper will not delete (the election path's ACL
// lets the world create there but not delete; electd has no credentials)
// ends its leave at the refusal, closes its session so that the node goes
// with it, says why in one line and exits 1; its successor leads within a
// few round-trips of the SIGTERM, not after the session's expiry (issue 33).
func TestShutdownWhenZooKeeperRefusesTheDelete(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{Servers: 1, TickTime: time.Second}) // sessions up to 20 s
	servers := ens.Servers()
	c, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wait.For(t, 30*time.Second, "the test's ZooKeeper session", func() bool { return c.State() == zk.StateHasSession })
	if _, err := c.Create("/refused", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// Create and read, not delete: electd joins, and cannot leave.
	if _, err := c.Create("/refused/app", nil, 0, zk.WorldACL(zk.PermCreate|zk.PermRead)); err != nil {
		t.Fatal(err)
	}

	start := func(id string) *electdtest.Proc {
		return electdtest.Start(t, electdtest.Spec{Config: &electdtest.Config{
			ID: id, Servers: servers, SessionTimeout: sessionTimeout, Path: "/refused/app",
			LogFormat: "text", ShutdownTimeout: time.Minute,
		}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := start("leader")
	wait.For(t, time.Minute, "the first participant to lead", func() bool { return leader.IsLeader(ctx) })
	next := start("next")
	wait.For(t, time.Minute, "the second participant to follow the first", func() bool {
		v, err := next.View(ctx)
		return err == nil && v.Leader != nil && v.Leader.ID == "leader"
	})
	rests := restOf(t, ctx, []*electdtest.Proc{next})

	sent := time.Now()
	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Asked as fast as it answers: the first 200 is within one request of
	// the moment the successor leads.
	var at time.Time
	wait.For(t, time.Minute, "the successor to lead", func() bool {
		for !next.IsLeader(ctx) {
			if time.Since(sent) > time.Minute || ctx.Err() != nil {
				return false
			}
		}
		at = time.Now()
		return true
	})
	handoff := at.Sub(sent)
	t.Logf("handoff: the successor led %v after SIGTERM (bound %v; session timeout %v)",
		handoff.Round(10*time.Microsecond), handoffBound, sessionTimeout)
	if handoff > handoffBound {
		t.Errorf("the successor led %v after SIGTERM, past %v: it waited for the old session to expire", handoff, handoffBound)
	}

	exitErr, exited := leader.Wait(handoffBound)
	if !exited {
		t.Fatalf("the leader still runs %v after SIGTERM", handoffBound)
	}
	if got := electdtest.ExitStatus(exitErr); got != 1 {
		t.Errorf("exit status %d, want 1 (the node was not deleted as configured)", got)
	}
	lines := leader.LogLines("could not delete")
	if len(lines) != 1 || !strings.Contains(lines[0], "not authenticated") || !strings.Contains(lines[0], "session is closed") {
		t.Errorf("want one log line saying the delete was refused and the node goes with the session, got %d:\n%s",
			len(lines), strings.Join(lines, "\n"))
	}
	if leader.LogHas("ran out") {
		t.Error("the leader waited out shutdown_timeout")
	}
	if err := electdtest.WaitIdle(ctx, []*electdtest.Proc{next}, rests, 2*time.Second); err != nil {
		t.Errorf("the successor is not idle again: %v", err)
	}
}
