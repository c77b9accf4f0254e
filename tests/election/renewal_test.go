package election_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
)

// renewCounter counts the lease renewals of one session.
type renewCounter struct{ n atomic.Int64 }

func (c *renewCounter) SessionExpired()            {}
func (c *renewCounter) Reconnected()               {}
func (c *renewCounter) LeaseRenewed(time.Duration) { c.n.Add(1) }

// TestZKRenewalLoad: only the leader and its successor renew the lease with
// syncs; every other follower costs ZooKeeper only its pings, so syncs per
// election do not grow with the participants (docs/design/election-and-lease.md, "The
// lease"). After a handoff the new successor takes over the renewing.
func TestZKRenewalLoad(t *testing.T) {
	ens := startZK(t)
	h := newHarness(t, ens, "/renewal/load", election.ModeLatch)
	counters := map[string]*renewCounter{}
	var ps []*participant
	for i := 0; i < 6; i++ {
		c := &renewCounter{}
		// The next in line takes over, so that the successor after the
		// handoff is known: the test is about who renews.
		p := h.start(opts{session: func(sc *zksession.Config) { sc.Recorder = c },
			config: func(c *election.Config) { c.Handoff = election.HandoffNext }})
		waitFor(t, 15*time.Second, p.name+" joined", func() bool { return p.status().Joined })
		counters[p.name] = c
		ps = append(ps, p)
	}
	l := h.waitOneLeader(10 * time.Second)
	h.waitAgreement(l)

	// checkRenewers waits until the leader and its successor have renewed a
	// few times from now on, then checks that nobody else did meanwhile.
	checkRenewers := func(leader, next *participant) {
		t.Helper()
		before := map[string]int64{}
		for name, c := range counters {
			before[name] = c.n.Load()
		}
		for _, p := range []*participant{leader, next} {
			waitFor(t, 20*time.Second, p.name+" to renew 3 times", func() bool {
				return counters[p.name].n.Load()-before[p.name] >= 3
			})
		}
		for _, p := range h.live() {
			if p == leader || p == next {
				continue
			}
			if n := counters[p.name].n.Load() - before[p.name]; n != 0 {
				t.Errorf("%s, neither leader nor next in line, renewed %d times", p.name, n)
			}
		}
	}
	checkRenewers(ps[0], ps[1])

	ps[0].resignClose(t)
	next := h.waitLeaderOtherThan(10*time.Second, ps[0])
	if next != ps[1] {
		t.Fatalf("%s leads after the handoff, want %s", next, ps[1])
	}
	h.waitAgreement(next)
	checkRenewers(ps[1], ps[2])
}
