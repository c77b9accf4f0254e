package election

import (
	"errors"
	"testing"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

func TestRaceWinAndLose(t *testing.T) {
	u := newUnit(t, Config{Mode: ModeRace})
	u.settle()
	if st := u.wantLeader(true); st.Node != raceNode || st.FencingToken == 0 {
		t.Fatalf("winner status %+v", st)
	}

	v := newUnit(t, Config{Mode: ModeRace, ID: "other"})
	v.f.put("/e/leader", "web-1", 0x2000, zk.FlagEphemeral)
	v.settle()
	st := v.wantLeader(false)
	if st.Leader == nil || st.Leader.ID != "web-1" || !st.Joined {
		t.Fatalf("loser status %+v, want following web-1", st)
	}
	// The leader goes: race again.
	v.f.remove("/e/leader")
	if ev := v.event(); ev.kind != evLeader {
		t.Fatalf("event %v, want evLeader", ev.kind)
	}
	v.settle()
	v.wantLeader(true)
}

func TestRaceLostCreateReply(t *testing.T) {
	u := newUnit(t, Config{Mode: ModeRace})
	u.f.fail("create", "/e/leader", zk.ErrConnectionClosed, true)
	if err := u.settleErr(); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("settle = %v, want the lost reply", err)
	}
	if p := u.core().pending; p == nil || p.name != raceNode {
		t.Fatalf("pending = %+v, want the leader node", p)
	}
	u.settle()
	u.wantLeader(true)
}

func TestRaceReleaseHandsOn(t *testing.T) {
	u := newUnit(t, Config{Mode: ModeRace})
	u.settle()
	if err := u.e.r.release(LossReleased); err != nil {
		t.Fatal(err)
	}
	// Nobody else races: the node stays absent and the releaser waits out
	// its hold-off before racing again.
	u.settle()
	if u.f.exists("/e/leader") {
		t.Fatal("the releaser raced again at once")
	}
	u.wantLeader(false)
	u.clk.Advance(raceHoldOff)
	for u.event().kind != evTimer { // the own node's watch fires first, stale
	}
	u.settle()
	u.wantLeader(true)
}

func TestRaceParticipantsListsFollowers(t *testing.T) {
	u := newUnit(t, Config{Mode: ModeRace, Advertise: "10.0.0.1:80"})
	u.f.put("/e/leader", "web-1", 0x2000, zk.FlagEphemeral)
	u.settle()
	ps, err := u.e.r.participants(u.f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].ID != "web-1" || !ps[0].IsLeader || ps[1].ID != "me" || ps[1].Advertise != "10.0.0.1:80" {
		t.Fatalf("participants %+v, want web-1 leading then me", ps)
	}
}
