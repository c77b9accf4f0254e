package election

import (
	"strings"
	"testing"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// newResumed is a unit whose session was resumed from a previous process:
// the election holds what that process left (put by the test before the
// first settle), and the lease is not proved yet on this process.
func newResumed(t *testing.T, cfg Config) *unit {
	u := newUnit(t, cfg)
	u.s.mu.Lock()
	u.s.resumed, u.s.leaseSID, u.s.leaseEnd = unitSession, 0, u.clk.Now()
	u.s.mu.Unlock()
	return u
}

// left puts the previous process's queue node, meta node and id claim.
func (u *unit) left(id string) string {
	u.f.put(idNode(u.e.cfg.Path, u.e.cfg.ID), u.e.cfg.ID, unitSession, zk.FlagEphemeral)
	u.f.put(metaNode(u.e.cfg.Path, unitSession), `{"id":"`+u.e.cfg.ID+`"}`, unitSession, zk.FlagEphemeral)
	return u.other(unitSession, id)
}

func (u *unit) tokenOf(node string) int64 {
	u.t.Helper()
	_, st, err := u.f.Get(nodePath(u.e.cfg.Path, node))
	if err != nil {
		u.t.Fatalf("read %s: %v", node, err)
	}
	return st.Czxid
}

func TestAdoptQueueLeader(t *testing.T) {
	for _, mode := range []Mode{ModeLatch, ModeSelector} {
		t.Run(string(mode), func(t *testing.T) {
			u := newResumed(t, Config{Mode: mode})
			node := u.left("me")
			u.other(0x2000, "web-2")
			tok := u.tokenOf(node)
			u.f.resetOps()
			u.settle()
			if n := u.f.opCount("create /e/"); n != 0 {
				t.Fatalf("%d creates in the election, want none (adopt): %v", n, u.f.allOps())
			}
			if n := u.f.opCount("sync"); n == 0 {
				t.Fatalf("no sync before leading: %v", u.f.allOps())
			}
			st := u.wantLeader(true)
			if st.Node != node || st.FencingToken != tok {
				t.Fatalf("leads with %s token %d, want %s token %d", st.Node, st.FencingToken, node, tok)
			}
			if got := u.ours(); len(got) != 1 || got[0] != node {
				t.Fatalf("own nodes %v, want [%s]", got, node)
			}
			if st.Why == ReasonDuplicateID || !strings.Contains(u.log.String(), "adopted the own node") {
				t.Fatalf("status %+v; log:\n%s", st, u.log.String())
			}
		})
	}
}

// A resumed leader leads only once a sync answered on the resumed session.
func TestAdoptLeaderWaitsForTheLease(t *testing.T) {
	u := newResumed(t, Config{})
	node := u.left("me")
	u.f.fail("sync", "/", zk.ErrConnectionClosed, false).times = 2
	u.settle()
	if st := u.wantLeader(false); st.Why != ReasonLeaseExpired || st.Node != node {
		t.Fatalf("status %+v, want holding %s with no lease", st, node)
	}
	if _, err := u.s.Renew(); err == nil {
		t.Fatal("the second sync did not fail")
	}
	u.wantLeader(false)
	if _, err := u.s.Renew(); err != nil {
		t.Fatal(err)
	}
	u.wantLeader(true)
}

func TestAdoptQueueFollowerKeepsItsPlace(t *testing.T) {
	u := newResumed(t, Config{})
	u.other(0x2000, "web-2")
	node := u.left("me")
	u.other(0x3000, "web-3")
	u.settle()
	st := u.wantLeader(false)
	if st.Node != node || st.Leader == nil || st.Leader.ID != "web-2" {
		t.Fatalf("status %+v, want %s following web-2", st, node)
	}
	if got := u.ours(); len(got) != 1 || got[0] != node {
		t.Fatalf("own nodes %v, want [%s]", got, node)
	}
}

// A create whose reply the previous process lost left a second node of the
// session: the lowest is adopted, the other deleted.
func TestAdoptDeletesTheSessionsOtherNodes(t *testing.T) {
	u := newResumed(t, Config{})
	node := u.left("me")
	u.other(0x2000, "web-2")
	extra := u.other(unitSession, "me")
	u.settle()
	if u.f.exists(nodePath("/e", extra)) {
		t.Fatalf("%s was kept", extra)
	}
	if st := u.wantLeader(true); st.Node != node {
		t.Fatalf("leads with %s, want %s", st.Node, node)
	}
}

func TestAdoptNothingJoinsAnew(t *testing.T) {
	u := newResumed(t, Config{})
	u.other(0x2000, "web-2")
	u.settle()
	ours := u.ours()
	if len(ours) != 1 || u.wantLeader(false).Leader.ID != "web-2" {
		t.Fatalf("own nodes %v, want one new node behind web-2", ours)
	}
}

func TestAdoptRaceLeader(t *testing.T) {
	u := newResumed(t, Config{Mode: ModeRace})
	u.f.put(idNode("/e", "me"), "me", unitSession, zk.FlagEphemeral)
	u.f.put("/e/leader", "me", unitSession, zk.FlagEphemeral)
	tok := u.tokenOf(raceNode)
	u.f.resetOps()
	u.settle()
	if n := u.f.opCount("create /e/leader"); n != 0 {
		t.Fatalf("raced again: %v", u.f.allOps())
	}
	if st := u.wantLeader(true); st.FencingToken != tok {
		t.Fatalf("token %d, want %d", st.FencingToken, tok)
	}
}

func TestAdoptRaceFollower(t *testing.T) {
	u := newResumed(t, Config{Mode: ModeRace})
	u.f.put("/e/leader", "web-2", 0x2000, zk.FlagEphemeral)
	u.settle()
	if st := u.wantLeader(false); st.Leader == nil || st.Leader.ID != "web-2" {
		t.Fatalf("status %+v, want following web-2", st)
	}
}

// A resumed observer owns no node: it adopts nothing, publishes nothing,
// and observes the leader.
func TestAdoptObserver(t *testing.T) {
	u := newResumed(t, Config{Observer: true})
	u.other(0x2000, "web-2")
	u.f.resetOps()
	u.settle()
	if n := u.f.opCount("create"); n != 0 {
		t.Fatalf("an observer created %d nodes: %v", n, u.f.allOps())
	}
	if st := u.wantLeader(false); st.Leader == nil || st.Leader.ID != "web-2" {
		t.Fatalf("status %+v, want observing web-2", st)
	}
}
