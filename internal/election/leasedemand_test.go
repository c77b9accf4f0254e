package election

import (
	"testing"
	"time"
)

// Only the leader and its successor demand the lease; a participant that
// must lead without one renews before it answers as leader.
func TestLeaseDemandFollowsPosition(t *testing.T) {
	u := newUnit(t, Config{})
	a := u.other(0x2000, "a")
	b := u.other(0x2001, "b")
	u.settle()
	if u.e.loop.leasing || u.s.leaseDemand != 0 {
		t.Fatal("third in line demands the lease")
	}
	u.f.remove("/e/" + a)
	for u.event().kind != evLeader { // the leader walk finds b: we are next
	}
	u.settle()
	if !u.e.loop.leasing {
		t.Fatal("next in line does not demand the lease")
	}
	// The lease lapsed meanwhile (say the loop's renewals failed): taking
	// over renews first.
	u.s.mu.Lock()
	u.s.leaseEnd = time.Time{}
	u.s.mu.Unlock()
	u.f.resetOps()
	u.f.remove("/e/" + b)
	for u.event().kind != evPred {
	}
	u.settle()
	u.wantLeader(true)
	if u.f.opCount("sync") != 1 {
		t.Fatalf("ops %v: want one sync before leading", u.f.ops)
	}
	u.core().forget(LossReleased)
	if u.e.loop.leasing || u.s.leaseDemand != 0 {
		t.Fatal("a participant without a node still demands the lease")
	}
}
