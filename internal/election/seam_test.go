package election

import (
	"context"
	"testing"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The recipes on the fake seam alone (fakehost_test.go): each mode's
// behaviour as its file and recipeHost describe it, with no Elector.

func TestSeamQueueAloneLeads(t *testing.T) {
	u := newSeamUnit(t, Config{})
	u.settle()
	v := u.h.viewed()
	if !v.holds || v.leader == nil || v.leader.Node != v.node || !u.h.lease {
		t.Fatalf("view %+v, lease wanted %v: want it leading with its own node and a lease", v, u.h.lease)
	}
	if !u.h.f.exists("/e/"+v.node) || !u.h.f.exists(metaNode("/e", unitSession)) {
		t.Fatal("own node or meta node missing")
	}
}

// A follower watches its predecessor, names the leader, keeps a lease ready
// as next in line, and leads once the predecessor's node goes.
func TestSeamQueueFollowerTakesOver(t *testing.T) {
	u := newSeamUnit(t, Config{})
	first := u.other(0x2000, "web-1", ModeLatch)
	u.settle()
	v := u.h.viewed()
	if v.holds || v.leader == nil || v.leader.ID != "web-1" || !u.h.lease {
		t.Fatalf("view %+v, lease wanted %v: want following web-1 with a lease ready", v, u.h.lease)
	}
	u.h.f.remove("/e/" + first)
	for !u.h.viewed().holds {
		u.event()
		u.settle()
	}
	if v := u.h.viewed(); v.leader == nil || v.leader.ID != "me" {
		t.Fatalf("leader %+v, want me", v.leader)
	}
}

// A release deletes the own node and re-queues at the back, behind the
// participant that now leads.
func TestSeamQueueReleaseRequeues(t *testing.T) {
	u := newSeamUnit(t, Config{})
	u.settle()
	node := u.h.viewed().node
	u.other(0x2000, "web-2", ModeLatch)
	if err := u.r.release(LossReleased); err != nil {
		t.Fatal(err)
	}
	if u.h.f.exists("/e/" + node) {
		t.Fatal("own node kept after release")
	}
	u.settle()
	v := u.h.viewed()
	if v.holds || v.node == node || v.leader == nil || v.leader.ID != "web-2" || v.lossHint != LossReleased {
		t.Fatalf("view %+v: want re-queued behind web-2, loss released", v)
	}
}

// A leader leaving for good moves the participants ahead of the newest
// behind it, and reads nothing with HandoffNext.
func TestSeamQueueHandOffToNewest(t *testing.T) {
	for _, h := range []HandoffPolicy{HandoffNewest, HandoffNext} {
		t.Run(string(h), func(t *testing.T) {
			u := newSeamUnit(t, Config{Handoff: h})
			u.settle()
			old := u.other(0x2000, "old", ModeLatch)
			newest := u.other(0x3000, "new", ModeLatch)
			u.leaderReads()
			u.h.f.resetOps()
			u.r.handOff(context.Background())
			if h == HandoffNext {
				if ops := u.h.f.allOps(); len(ops) != 0 {
					t.Fatalf("handoff next sent %v, want nothing", ops)
				}
				return
			}
			if u.h.f.exists("/e/"+old) || !u.h.f.exists("/e/"+newest) {
				t.Fatalf("queue %v: want old moved, new kept", u.h.f.children("/e"))
			}
		})
	}
}

// A session change forgets the own node (it went with the old session).
func TestSeamQueueNewSessionForgetsTheNode(t *testing.T) {
	u := newSeamUnit(t, Config{})
	u.settle()
	u.r.newSession(0x5000, false)
	if v := u.h.viewed(); v.holds || v.node != "" || v.lossHint != LossExpired || u.r.owns() {
		t.Fatalf("view %+v after a new session: want no node, loss expired", v)
	}
}

// The race: a follower watches <path>/leader and races when it goes.
func TestSeamRaceFollowsThenWins(t *testing.T) {
	u := newSeamUnit(t, Config{Mode: ModeRace})
	u.h.f.put(metaNode("/e", 0x2000), `{"id":"web-1"}`, 0x2000, zk.FlagEphemeral)
	u.h.f.put("/e/leader", "web-1", 0x2000, zk.FlagEphemeral)
	u.settle()
	if v := u.h.viewed(); v.holds || v.leader == nil || v.leader.ID != "web-1" || u.h.lease {
		t.Fatalf("view %+v, lease %v: want following web-1 without a lease", v, u.h.lease)
	}
	u.h.f.remove("/e/leader")
	u.event()
	u.settle()
	if v := u.h.viewed(); !v.holds || v.node != raceNode {
		t.Fatalf("view %+v: want leading on %s", v, raceNode)
	}
}
