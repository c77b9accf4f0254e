package election

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// A participant whose id another live session holds says so at once (log,
// Status), stays out of the queue, counts the duplicate once, and joins as
// soon as the holder's claim is gone.
func TestDuplicateIDNewerDoesNotStand(t *testing.T) {
	rec := &countRecorder{}
	u := newUnit(t, Config{ID: "web-2", Recorder: rec})
	held := u.other(0x2000, "web-2")
	u.f.put(idNode("/e", "web-2"), "web-2", 0x2000, zk.FlagEphemeral)

	for range 2 { // a retry neither logs nor counts again
		if err := u.settleErr(); !errors.Is(err, errDuplicateID) {
			t.Fatalf("settle: %v, want %v", err, errDuplicateID)
		}
	}
	st := u.e.Status()
	if st.Why != ReasonDuplicateID || st.Joined || st.IsLeader {
		t.Fatalf("status %v %q joined=%v leader=%v; want duplicate id, not joined", st.Why, st.Reason, st.Joined, st.IsLeader)
	}
	for _, want := range []string{"0x2000", `"web-2"`, "pod name"} {
		if !strings.Contains(st.Reason, want) {
			t.Errorf("reason %q lacks %q", st.Reason, want)
		}
	}
	if got := u.ours(); len(got) != 0 {
		t.Fatalf("joined with %v while duplicated", got)
	}
	if u.f.exists("/e.advertise/" + sessionHex(unitSession)) {
		t.Fatal("published a meta node while duplicated")
	}
	logs := u.log.String()
	if n := strings.Count(logs, "level=WARN msg=\"duplicate participant id"); n != 1 {
		t.Fatalf("%d duplicate warnings, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "pod name") {
		t.Fatalf("the warning does not say what to do:\n%s", logs)
	}
	if rec.dups != 1 {
		t.Fatalf("duplicate counted %d times, want 1", rec.dups)
	}
	if d := u.e.nextBackoff(errDuplicateID); d != dupRetry {
		t.Fatalf("retry in %v, want %v", d, dupRetry)
	}

	// The older one leaves: the newer claims the id and joins.
	u.f.remove(nodePath("/e", held))
	u.f.remove(idNode("/e", "web-2"))
	u.settle()
	u.wantLeader(true)
	if _, st, err := u.f.Get(idNode("/e", "web-2")); err != nil || st.EphemeralOwner != unitSession {
		t.Fatalf("claim %+v, %v; want ours", st, err)
	}
	if !strings.Contains(u.log.String(), "the id is ours now") {
		t.Fatal("no line saying the id is ours now")
	}
}

// The claim costs one create per join, is ours again after a create whose
// reply was lost, and goes on leaving, so that a replacement joins at once.
func TestDuplicateIDClaim(t *testing.T) {
	u := newUnit(t, Config{ID: "web-1"})
	// A claim our own session made (a lost reply) is ours.
	u.f.put(idNode("/e", "web-1"), "web-1", unitSession, zk.FlagEphemeral)
	u.settle()
	u.wantLeader(true)
	if n := u.f.opCount("create /e.ids/"); n != 1 {
		t.Fatalf("%d creates of the claim, want 1", n)
	}
	if err := u.e.setCandidate(context.Background(), false, LossAppUnhealthy); err != nil {
		t.Fatal(err)
	}
	if u.f.exists(idNode("/e", "web-1")) {
		t.Fatal("the claim outlived the leave")
	}
}

// A first join makes the claims' parent; an id that is no valid node name
// is escaped.
func TestDuplicateIDNode(t *testing.T) {
	u := newUnit(t, Config{ID: "a/../zookeeper"})
	u.settle()
	u.wantLeader(true)
	if got, want := u.f.children("/e.ids"), []string{"id-a%2F..%2Fzookeeper"}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("claims %v, want %v", got, want)
	}
}

// Race mode claims the id too: a newer duplicate does not race.
func TestDuplicateIDRace(t *testing.T) {
	u := newUnit(t, Config{ID: "web-2", Mode: ModeRace})
	u.f.put(idNode("/e", "web-2"), "web-2", 0x2000, zk.FlagEphemeral)
	if err := u.settleErr(); !errors.Is(err, errDuplicateID) {
		t.Fatalf("settle: %v, want %v", err, errDuplicateID)
	}
	if st := u.e.Status(); st.Why != ReasonDuplicateID || u.f.exists("/e/"+raceNode) {
		t.Fatalf("status %v %q, leader node there: %v; want duplicate id and no race", st.Why, st.Reason, u.f.exists("/e/"+raceNode))
	}
}
