package reconnect

import (
	"context"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// freezeInsideSession freezes m until every participant of g has seen its
// connection time out, then resumes it before any session expires.
//
// A client gives up its connection 2/3 of the session timeout T after it
// last heard from the server; the server expires a session T after it last
// heard from the client. The leader and the follower next in line renew
// their lease every T/10, so both ends are recent for them; the others only
// ping, every T/3, so the freeze must start just after every session's last
// exchange: then the last to time out does so 2T/3 after the freeze began
// and the first to expire would T - a later, a being how long before the
// freeze its last exchange was. The freeze starts when every session of g
// has had an answer within T/6, and ends as soon as all have timed out,
// which leaves T/6 (1.6 s) for the reconnect. Race mode has two sessions
// that only ping; any two points on the ping period's circle are within
// half of it, T/6, of each other, so that moment comes.
func freezeInsideSession(t *testing.T, m *zktest.Member, g *group) {
	t.Helper()
	recent := sessionTimeout / 6
	wait.For(t, 2*sessionTimeout, "every session answered within the last "+recent.String(), func() bool {
		conns, err := m.Conns()
		if err != nil {
			return false
		}
		fresh := 0
		for _, c := range conns {
			for _, p := range g.procs {
				since, err := c.SinceLastResponse()
				if err != nil {
					t.Fatal(err)
				}
				if c.Session == g.session(t, p) && since < recent {
					fresh++
				}
			}
		}
		return fresh == len(g.procs)
	})
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := m.Resume(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: ZooKeeper frozen for %v", g.mode, time.Since(frozen).Round(time.Millisecond))
		}
	}
	defer resume()
	for _, p := range g.procs {
		wait.For(t, sessionTimeout, p.Name+"'s connection timed out", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			v, err := p.View(ctx)
			return err == nil && v.Self.State == "suspended"
		})
	}
	resume()
	waitAll(t, []*group{g}, "reconnected", func(v electdtest.LeaderView) bool { return v.Self.State == "connected" })
}
