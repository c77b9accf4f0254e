package election_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/tests/harness/curatortest"
)

// TestZKCandidacy: a withdrawn leader hands over to the newest participant
// (Config.Handoff) and keeps watching; an observer never owns a node and names the leader; standing
// again joins at the back. The checker holds throughout: never two leaders.
func TestZKCandidacy(t *testing.T) {
	ens := startZK(t)
	h := newHarness(t, ens, "/candidacy/election", election.ModeLatch)
	ps := h.startJoined(3, opts{})
	obs := h.start(opts{config: func(c *election.Config) { c.Observer = true }})
	l := h.waitOneLeader(10 * time.Second)
	if l != ps[0] {
		t.Fatalf("%s leads, want %s", l, ps[0])
	}
	h.waitKnows(l, 3)

	if err := l.el.SetCandidate(ctxFor(t, 10*time.Second), false, election.LossAppUnhealthy); err != nil {
		t.Fatal(err)
	}
	next := h.waitLeaderOtherThan(10*time.Second, l)
	if next != ps[2] {
		t.Fatalf("%s leads after the withdrawal, want the newest, %s", next, ps[2])
	}
	waitFor(t, 10*time.Second, "the withdrawn participant and the observer to name "+next.name, func() bool {
		for _, p := range []*participant{l, obs} {
			st := p.status()
			if st.Candidate || st.Why != election.ReasonWithdrawn || st.Leader == nil || st.Leader.ID != next.id {
				return false
			}
		}
		return true
	})
	for _, z := range h.queue() {
		if z.owner == l.sess.ID() || z.owner == obs.sess.ID() {
			t.Fatalf("a non-candidate owns %v", z)
		}
	}
	if got := l.rec.losses(); len(got) != 1 || got[0] != election.LossAppUnhealthy {
		t.Fatalf("losses %v, want [app_unhealthy]", got)
	}

	if err := l.el.SetCandidate(ctxFor(t, 10*time.Second), true, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, l.name+" back in the queue, last", func() bool {
		q := h.queue()
		return len(q) == 3 && q[2].owner == l.sess.ID()
	})
	if !next.leads() {
		t.Fatalf("%s stopped leading when %s stood again", next, l)
	}
}

// TestZKSwitchover hands leadership to the last of four participants: the
// two ahead of it re-queue, then the leader releases; never two leaders.
// A switchover to an unknown id, or to one queued behind a Curator peer, is
// refused and the leader leads on; one racing the target's crash never
// makes two leaders either.
func TestZKSwitchover(t *testing.T) {
	ens := startZK(t)

	t.Run("to the last", func(t *testing.T) {
		h := newHarness(t, ens, "/switchover/last", election.ModeLatch)
		ps := h.startJoined(4, opts{})
		l := h.waitOneLeader(10 * time.Second)
		h.waitAgreement(l)
		if err := l.el.Switchover(ctxFor(t, 10*time.Second), ps[3].id); err != nil {
			t.Fatal(err)
		}
		next := h.waitLeaderOtherThan(10*time.Second, l)
		if next != ps[3] {
			t.Fatalf("%s leads after the switchover, want %s", next, ps[3])
		}
		h.waitAgreement(next)
		waitFor(t, 10*time.Second, "all four queued again", func() bool { return len(h.queue()) == 4 })
		if err := next.el.Switchover(ctxFor(t, 10*time.Second), "nobody"); !errors.Is(err, election.ErrSwitchover) {
			t.Fatalf("switchover to an unknown id: %v, want ErrSwitchover", err)
		}
		if !next.leads() {
			t.Fatalf("%s stopped leading after a refused switchover", next)
		}
	})

	t.Run("behind a Curator peer", func(t *testing.T) {
		const path = "/switchover/curator"
		h := newHarness(t, ens, path, election.ModeLatch)
		l := h.startJoined(1, opts{})[0]
		h.waitOneLeader(10 * time.Second)
		c := curatortest.Start(t, ens.ConnectString(), path, curatortest.Latch, "curator-1", 0)
		defer c.Close()
		target := h.startJoined(1, opts{})[0]
		err := l.el.Switchover(ctxFor(t, 10*time.Second), target.id)
		if !errors.Is(err, election.ErrSwitchover) || !strings.Contains(err.Error(), "curator-1") {
			t.Fatalf("switchover past a Curator peer: %v, want ErrSwitchover naming curator-1", err)
		}
		if !l.leads() || len(h.queue()) != 3 {
			t.Fatalf("after the refusal: %s leads %v, queue %v", l, l.leads(), h.queue())
		}
	})

	t.Run("racing the target's crash", func(t *testing.T) {
		h := newHarness(t, ens, "/switchover/race", election.ModeLatch)
		ps := h.startJoined(2, opts{})
		for i := 0; i < 5; i++ {
			target := h.startJoined(1, opts{})[0]
			l := h.waitOneLeader(10 * time.Second)
			h.waitAgreement(l)
			done := make(chan error, 1)
			go func() { done <- l.el.Switchover(ctxFor(t, 10*time.Second), target.id) }()
			time.Sleep(time.Duration(i) * time.Millisecond)
			target.stop(t) // its session closes: its node goes
			err := <-done
			t.Logf("round %d: switchover to a crashing %s: %v", i, target, err)
			if err != nil && !errors.Is(err, election.ErrSwitchover) {
				t.Fatalf("switchover: %v", err)
			}
			h.waitOneLeader(10 * time.Second) // the checker has watched for two all along
		}
		_ = ps
	})
}

// TestZKHandoffNewest is a rollout on real ZooKeeper: three participants of
// an old version, then three of a new one; the old ones leave one after
// the other, the leader first. The leader hands over to the newest
// participant, so the rollout changes the leader once, and never to a
// participant that leaves next (docs/design/handover.md, "Handoff").
func TestZKHandoffNewest(t *testing.T) {
	ens := startZK(t)
	for _, mode := range []election.Mode{election.ModeLatch, election.ModeSelector} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, ens, "/handoff/"+string(mode), mode)
			old := h.startJoined(3, opts{})
			l := h.waitOneLeader(10 * time.Second)
			if l != old[0] {
				t.Fatalf("%s leads, want %s (it joined first)", l, old[0])
			}
			fresh := h.startJoined(3, opts{})
			h.waitAgreement(l)
			h.waitKnows(l, 6)
			for _, p := range old {
				p.resignClose(t)
			}
			next := h.waitOneLeader(10 * time.Second)
			if next != fresh[2] {
				t.Fatalf("%s leads after the old participants left, want the newest, %s", next, fresh[2])
			}
			// The recorder hears of an acquisition after Status shows it
			// (the publisher's emit), so wait for the second count.
			acquired := func() (n int64) {
				for _, p := range h.all() {
					n += p.rec.acquired.Load()
				}
				return n
			}
			waitFor(t, agreeWithin, "the newest's acquisition counted", func() bool { return acquired() >= 2 })
			if changes := acquired(); changes != 2 {
				t.Errorf("leadership was taken %d times in all, want 2: the first leader, then the newest", changes)
			}
		})
	}
}
