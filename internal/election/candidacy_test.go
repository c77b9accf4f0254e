package election

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

func TestObserverWatchesWithoutStanding(t *testing.T) {
	u := newUnit(t, Config{Observer: true})
	u.settle()
	st := u.e.Status()
	if st.Candidate || st.IsLeader || st.Why != ReasonWithdrawn || st.Leader != nil {
		t.Fatalf("observer on an empty path: %+v", st)
	}
	if u.f.opCount("create") != 0 {
		t.Fatalf("an observer wrote: %v", u.f.ops)
	}
	a := u.other(0x2000, "web-1")
	u.event()
	u.settle()
	if st := u.e.Status(); st.Leader == nil || st.Leader.ID != "web-1" || !st.Joined {
		t.Fatalf("observer names %+v, want web-1", st.Leader)
	}
	u.other(0x2001, "web-2")
	u.f.remove("/e/" + a)
	u.event()
	u.settle()
	if st := u.e.Status(); st.Leader == nil || st.Leader.ID != "web-2" {
		t.Fatalf("after the leader left the observer names %+v, want web-2", st.Leader)
	}
	if n := u.f.opCount("create") + u.f.opCount("delete"); n != 0 {
		t.Fatalf("an observer wrote %d times", n)
	}
}

func TestWithdrawLeaderHandsOver(t *testing.T) {
	u, node := newLeaderWithFollower(t)
	if err := u.e.setCandidate(context.Background(), false, LossAppUnhealthy); err != nil {
		t.Fatal(err)
	}
	st := u.e.Status()
	if st.IsLeader || st.Candidate || st.Reason != "not a candidate (app_unhealthy)" {
		t.Fatalf("withdrawn: %+v", st)
	}
	if u.f.exists("/e/"+node) || u.f.exists("/e.advertise/"+sessionHex(unitSession)) {
		t.Fatal("the withdrawn leader's node or meta node is still there")
	}
	if u.e.v.lossHint != LossAppUnhealthy {
		t.Fatalf("loss hint %q, want app_unhealthy", u.e.v.lossHint)
	}
	u.settle()
	if st := u.e.Status(); st.Leader == nil || st.Leader.ID != "web-2" {
		t.Fatalf("the observer names %+v, want web-2", st.Leader)
	}
	// Standing again joins at the back.
	if err := u.e.setCandidate(context.Background(), true, ""); err != nil {
		t.Fatal(err)
	}
	u.settle()
	st = u.wantLeader(false)
	if !st.Candidate || len(u.ours()) != 1 || u.ours()[0] == node {
		t.Fatalf("standing again: %+v, own nodes %v", st, u.ours())
	}
}

func TestWithdrawWhileDisconnected(t *testing.T) {
	u := newUnit(t, Config{})
	u.settle()
	u.setState(zksession.StateSuspended)
	err := u.e.setCandidate(context.Background(), false, LossWithdrawn)
	if !errors.Is(err, errWithdrawPending) {
		t.Fatalf("withdraw while disconnected = %v, want errWithdrawPending", err)
	}
	if u.e.Status().IsLeader {
		t.Fatal("still leading after withdrawing")
	}
	u.setState(zksession.StateConnected)
	u.settle()
	if len(u.ours()) != 0 {
		t.Fatalf("own nodes %v after reconnecting, want none", u.ours())
	}
}

// switchoverUnit is a leader with electd peers queued behind it.
func switchoverUnit(t *testing.T, peers ...string) (*unit, map[string]string) {
	u := newUnit(t, Config{})
	u.settle()
	nodes := map[string]string{}
	for i, id := range peers {
		sid := int64(0x2000 + i)
		nodes[id] = u.other(sid, id)
		if !strings.HasPrefix(id, "curator") {
			u.f.put("/e.advertise/"+sessionHex(sid), `{"id":"`+id+`"}`, sid, zk.FlagEphemeral)
		}
	}
	return u, nodes
}

func TestSwitchover(t *testing.T) {
	u, nodes := switchoverUnit(t, "web-2", "web-3", "web-4")
	own := u.core().node
	if err := u.e.r.switchover(context.Background(), "web-4"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{own, nodes["web-2"], nodes["web-3"]} {
		if u.f.exists("/e/" + n) {
			t.Errorf("%s still queued ahead of the target", n)
		}
	}
	if !u.f.exists("/e/" + nodes["web-4"]) {
		t.Fatal("the target's node is gone")
	}
	u.settle()
	if st := u.wantLeader(false); st.Leader == nil || st.Leader.ID != "web-4" {
		t.Fatalf("after the switchover the old leader names %+v, want web-4", st.Leader)
	}
}

func TestSwitchoverRefused(t *testing.T) {
	for _, tc := range []struct {
		name, to string
		peers    []string
		want     error
		msg      string
	}{
		{"unknown target", "web-9", []string{"web-3", "web-2"}, ErrSwitchover, `no candidate with id "web-9" in the queue (candidates: web-2, web-3)`},
		{"curator peer ahead", "web-3", []string{"curator-1", "web-3"}, ErrSwitchover, "not electd"},
		{"itself", "me", []string{"web-2"}, ErrSwitchover, "already leads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := switchoverUnit(t, tc.peers...)
			err := u.e.r.switchover(context.Background(), tc.to)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("switchover = %v, want %v saying %q", err, tc.want, tc.msg)
			}
			if n := u.f.opCount("delete"); n != 0 {
				t.Fatalf("a refused switchover deleted %d nodes", n)
			}
			u.wantLeader(true)
		})
	}
}

// The target leaves between the moves and the leader's own release: the
// leader gives up the switchover and leads on.
func TestSwitchoverTargetGone(t *testing.T) {
	u, nodes := switchoverUnit(t, "web-2", "web-3")
	reads := 0
	u.f.before = func(op, p string) {
		if op == "children" && p == "/e" {
			if reads++; reads == 2 {
				u.f.remove("/e/" + nodes["web-3"])
			}
		}
	}
	err := u.e.r.switchover(context.Background(), "web-3")
	u.f.before = nil
	if !errors.Is(err, ErrSwitchover) || !strings.Contains(err.Error(), "not next in line") {
		t.Fatalf("switchover = %v", err)
	}
	u.settle()
	u.wantLeader(true)
}

func TestSwitchoverNeedsLeaderAndQueue(t *testing.T) {
	u := newUnit(t, Config{})
	u.other(0x2000, "web-1")
	u.settle()
	if err := u.e.r.switchover(context.Background(), "web-1"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("on a follower: %v, want ErrNotLeader", err)
	}
	r := newUnit(t, Config{Mode: ModeRace})
	r.settle()
	if err := r.e.r.switchover(context.Background(), "x"); !errors.Is(err, ErrNoQueue) {
		t.Fatalf("race: %v, want ErrNoQueue", err)
	}
}

// A participant that joins between the observer's read of an empty queue
// and its children watch fires no watch: the observer must look again.
func TestObserverSeesAJoinBetweenItsReads(t *testing.T) {
	u := newUnit(t, Config{Observer: true})
	u.f.put("/e/x", "", 0, 0) // the path exists, empty of participants
	u.f.remove("/e/x")
	reads := 0
	u.f.before = func(op, p string) {
		if op == "children" && p == "/e" {
			if reads++; reads == 2 { // between the plain read and the watched one
				u.other(0x2000, "web-1")
			}
		}
	}
	u.settle()
	u.f.before = nil
	if st := u.e.Status(); st.Leader == nil || st.Leader.ID != "web-1" {
		t.Fatalf("observer names %+v, want web-1", st.Leader)
	}
}
