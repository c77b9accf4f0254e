package election

import (
	"testing"

	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// After a reconnect within the session every participant re-verifies once
// and settles: at most one read of the queue, no watch set twice on a path,
// and a wake-up with nothing changed (the lease renewals wake the loop)
// costs no request (docs/design/election-and-lease.md, "Watches"). A leader that kept
// re-checking here spun on ZooKeeper and gained a goroutine per re-check.
func TestReconnectSettlesOnce(t *testing.T) {
	for _, mode := range []Mode{ModeLatch, ModeSelector, ModeRace} {
		for _, role := range []string{"leader", "follower", "observer"} {
			t.Run(string(mode)+"/"+role, func(t *testing.T) {
				u := newUnit(t, Config{Mode: mode, Observer: role == "observer"})
				if role != "leader" {
					u.f.put("/e", "", 0, 0)
					if mode == ModeRace {
						u.f.put("/e/leader", "web-2", 0x2000, zk.FlagEphemeral)
					} else {
						u.other(0x2000, "web-2")
					}
				}
				u.settle()
				if st := u.e.Status(); st.IsLeader != (role == "leader") || st.Leader == nil {
					t.Fatalf("before the fault: IsLeader %v, leader %+v (%s)", st.IsLeader, st.Leader, st.Reason)
				}
				checks := u.e.Counters().Rechecks

				for i := 0; i < 3; i++ { // three outages in a row: nothing may pile up
					u.setState(zksession.StateSuspended)
					u.settle()
					u.setState(zksession.StateConnected)
					u.settle()
				}
				if n := u.e.Counters().Rechecks - checks; n > 3 {
					t.Errorf("%d re-checks of the queue for three reconnects, want at most 3", n)
				}
				if n, where := u.f.maxWatches(); n > 1 {
					t.Errorf("%d watches set on %s, want at most 1", n, where)
				}
				if n := u.e.ws.count(); n > 3 {
					t.Errorf("%d watches held, want at most 3 (own node, and the queue or the leader)", n)
				}
				u.f.resetOps()
				u.settle() // a lease renewal's wake-up
				if ops := u.f.allOps(); len(ops) != 0 {
					t.Errorf("a wake-up with nothing changed sent %d requests %v, want 0", len(ops), ops)
				}
				if st := u.e.Status(); st.IsLeader != (role == "leader") || st.Leader == nil {
					t.Fatalf("after the faults: IsLeader %v, leader %+v (%s)", st.IsLeader, st.Leader, st.Reason)
				}
			})
		}
	}
}
