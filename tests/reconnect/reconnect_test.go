// Package reconnect holds the regression tests for a participant that
// loses its connection to ZooKeeper and gets it back inside its session: a
// server frozen past the client's read timeout, a standalone server
// restarted, a rolling restart of an ensemble. Each runs a leader, the
// follower next in line and an observer of every mode as real electd
// processes on a real ZooKeeper, and checks from outside that after the
// fault leadership is where it was and every participant is idle again:
// no more goroutines than before, no re-checks or requests beyond those of
// a participant at rest, and the same watches on the servers
// (docs/design/election-and-lease.md, "Watches").
package reconnect

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// sessionTimeout is every participant's. The freeze must outlast the
// client's read timeout (2/3 of it) and end before the server expires a
// session it last heard from up to a ping interval (1/3) before the freeze:
// 10 s leaves 1.6 s for the reconnect (freeze.go).
const sessionTimeout = 10 * time.Second

// window is how long a footprint is watched to call a participant idle.
const window = 3 * time.Second

var modes = []string{"latch", "selector", "race"}

// A server frozen (SIGSTOP) until every participant's connection has timed
// out, then resumed inside every session. One mode at a time: each freeze
// is timed to the sessions on the server (freeze_test.go).
func TestFreezeInsideSession(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.Options{})
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			gs := []*group{startGroup(t, ens, mode)}
			r := atRest(t, ens, gs)
			freezeInsideSession(t, ens.Member(1), gs[0])
			r.settled(t)
		})
	}
}

// A standalone server stopped and started again with its data: the
// sessions survive it (ZooKeeper restores them from its log), so every
// participant reconnects inside its session.
func TestRestartInsideSession(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.Options{})
	gs := startGroups(t, ens)
	r := atRest(t, ens, gs)
	m := ens.Member(1)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	waitAll(t, gs, "suspended", func(v electdtest.LeaderView) bool { return v.Self.State != "connected" })
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	r.settled(t)
}

// A 3-server ensemble restarted one server at a time, each back in the
// quorum before the next stops: the sessions on a stopped server move to
// another one.
func TestRollingRestartInsideSession(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.Options{Servers: 3})
	gs := startGroups(t, ens)
	r := atRest(t, ens, gs)
	for _, m := range ens.Members() {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		wait.For(t, 60*time.Second, fmt.Sprintf("server %d serving again", m.ID()), func() bool {
			mode := m.Mode()
			return mode == "leader" || mode == "follower"
		})
		waitAll(t, gs, "connected", func(v electdtest.LeaderView) bool { return v.Self.State == "connected" })
	}
	r.settled(t)
}

func startGroups(t *testing.T, ens *zktest.Ensemble) []*group {
	var gs []*group
	for _, mode := range modes {
		gs = append(gs, startGroup(t, ens, mode))
	}
	return gs
}

// rest is how the groups were at rest before the fault.
type rest struct {
	ens     *zktest.Ensemble
	groups  []*group
	procs   []*electdtest.Proc      // every group's, in order
	leaders []electdtest.LeaderView // each group's leader, as it reported itself
	rest    []invariant.Rest        // per process
	watches map[int64][]string      // per session, from the servers
	packets float64                 // packets/s the servers read from everyone
}

func atRest(t *testing.T, ens *zktest.Ensemble, gs []*group) *rest {
	t.Helper()
	r := &rest{ens: ens, groups: gs}
	for _, g := range gs {
		g.waitSettled(t)
		r.leaders = append(r.leaders, electdtest.Bind(t, g.leader()).ViewOf())
		r.procs = append(r.procs, g.procs...)
	}
	start, err := ens.PacketsReceived()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	windows, err := electdtest.FootprintWindow(ctxFor(t, 30*time.Second), r.procs, window)
	if err != nil {
		t.Fatal(err)
	}
	end, err := ens.PacketsReceived()
	if err != nil {
		t.Fatal(err)
	}
	r.packets = float64(end-start) / time.Since(began).Seconds()
	r.watches = r.sessionWatches(t)
	for i, w := range windows {
		r.rest = append(r.rest, invariant.RestOf(w))
		t.Logf("%s at rest: %d goroutines, %d re-checks, %d requests", r.procs[i].Name,
			w.End.Goroutines, w.End.Rechecks, w.End.Requests)
	}
	t.Logf("at rest: ZooKeeper reads %.2f packets/s from every participant; watches %v", r.packets, r.watches)
	return r
}

// settled checks the groups after a fault: each leader leads on in the same
// session with the same token, every participant is in its old session,
// idle again, with the watches it had, and ZooKeeper's load is back to what
// it was.
func (r *rest) settled(t *testing.T) {
	t.Helper()
	for i, g := range r.groups {
		g.waitSettled(t)
		was := r.leaders[i]
		if got := electdtest.Bind(t, g.leader()).ViewOf(); got.Self.Session != was.Self.Session ||
			got.Leader.FencingToken != was.Leader.FencingToken {
			t.Errorf("%s: leader %s now in session %s with token %d, was %s with %d", g.mode, g.leader().Name,
				got.Self.Session, got.Leader.FencingToken, was.Self.Session, was.Leader.FencingToken)
		}
		for _, p := range g.procs {
			if s := electdtest.Bind(t, p).ViewOf().Self.Session; s != g.sessions[p] {
				t.Errorf("%s is in session %s, was %s: the fault expired it", p.Name, s, g.sessions[p])
			}
		}
	}
	if err := electdtest.WaitIdle(ctxFor(t, 45*time.Second), r.procs, r.rest, window); err != nil {
		t.Error(err)
	}
	wait.For(t, 30*time.Second, "the watches set before the fault, and no others", func() bool {
		return reflect.DeepEqual(r.sessionWatches(t), r.watches)
	})
	// The servers' own count, over every session: a participant that
	// re-reads the queue shows here whatever it counts itself.
	wait.For(t, 45*time.Second, "ZooKeeper's load back to its rate at rest", func() bool {
		a, err := r.ens.PacketsReceived()
		if err != nil {
			return false
		}
		began := time.Now()
		sleep(window)
		b, err := r.ens.PacketsReceived()
		if err != nil {
			return false
		}
		rate := float64(b-a) / time.Since(began).Seconds()
		t.Logf("after the fault: ZooKeeper reads %.2f packets/s (%.2f/s at rest)", rate, r.packets)
		return rate <= 1.5*r.packets+1
	})
}

// sessionWatches reads the servers' watches of every participant's
// session. wchc lists data and exist watches, not child watches.
func (r *rest) sessionWatches(t *testing.T) map[int64][]string {
	t.Helper()
	all, err := r.ens.Watches()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]string{}
	for _, g := range r.groups {
		for _, p := range g.procs {
			sid := g.session(t, p)
			out[sid] = all[sid]
		}
	}
	return out
}

func waitAll(t *testing.T, gs []*group, desc string, cond func(electdtest.LeaderView) bool) {
	t.Helper()
	for _, g := range gs {
		for _, p := range g.procs {
			wait.For(t, 60*time.Second, p.Name+": "+desc, func() bool {
				v, err := p.View(context.Background())
				return err == nil && cond(v)
			})
		}
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func sleep(d time.Duration) { <-time.After(d) }
