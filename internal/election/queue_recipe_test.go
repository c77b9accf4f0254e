package election

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

func TestQueueJoinAloneLeads(t *testing.T) {
	u := newUnit(t, Config{})
	u.settle()
	st := u.wantLeader(true)
	ours := u.ours()
	if len(ours) != 1 || protectedID(ours[0]) == "" || !strings.Contains(ours[0], "-latch-") {
		t.Fatalf("own nodes = %v, want one protected latch node", ours)
	}
	if st.Node != ours[0] || st.Leader == nil || st.Leader.Node != ours[0] || st.FencingToken == 0 {
		t.Fatalf("status %+v does not name the own node %s with a token", st, ours[0])
	}
	if !u.f.exists("/e.advertise/" + sessionHex(unitSession)) {
		t.Fatal("no meta node for the session")
	}
	// The leader watches the queue: a newcomer makes it read the queue
	// once the burst delay is over.
	u.other(0x2000, "late")
	if ev := u.event(); ev.kind != evMembers {
		t.Fatalf("event %v, want evMembers", ev.kind)
	}
	u.clk.Advance(membersDelay)
	if ev := u.event(); ev.kind != evMembersDue {
		t.Fatalf("event %v, want evMembersDue", ev.kind)
	}
	u.settle()
	if st := u.wantLeader(true); st.Participants != 2 {
		t.Fatalf("participants = %d, want 2", st.Participants)
	}
}

func TestQueueFollowerLeadsWhenPredecessorGoes(t *testing.T) {
	u := newUnit(t, Config{})
	lead := u.other(0x2000, "web-1")
	u.settle()
	st := u.wantLeader(false)
	if st.Leader == nil || st.Leader.ID != "web-1" || st.Reason != "following web-1" {
		t.Fatalf("status %+v, want following web-1", st)
	}
	u.f.resetOps()
	u.f.remove("/e/" + lead)
	if ev := u.event(); ev.kind != evPred {
		t.Fatalf("event %v, want evPred", ev.kind)
	}
	u.settle()
	u.wantLeader(true)
	if n := u.f.opCount("create") + u.f.opCount("delete"); n != 0 {
		t.Fatalf("taking over wrote %d times; it must only read", n)
	}
}

// A leader whose node someone else deletes stops leading as the watch
// fires, before any re-check: its successor, notified at the same moment,
// may claim after one round-trip.
func TestLeaderStopsAsItsNodeIsDeleted(t *testing.T) {
	for _, mode := range []Mode{ModeLatch, ModeRace} {
		t.Run(string(mode), func(t *testing.T) {
			u := newUnit(t, Config{Mode: mode})
			u.settle()
			node := u.wantLeader(true).Node
			u.f.remove("/e/" + node)
			for ev := u.event(); ev.kind != evOwn; ev = u.event() {
				// the leader's members watch, latch only
			}
			u.wantLeader(false)
		})
	}
}

func TestQueueLeaderWalkReadsOnly(t *testing.T) {
	u := newUnit(t, Config{})
	a := u.other(0x2000, "a")
	b := u.other(0x2001, "b")
	u.other(0x2002, "c")
	u.settle()
	if st := u.wantLeader(false); st.Leader.ID != "a" {
		t.Fatalf("leader %q, want a", st.Leader.ID)
	}
	u.f.resetOps()
	u.f.remove("/e/" + a)
	if ev := u.event(); ev.kind != evLeader {
		t.Fatalf("event %v, want evLeader", ev.kind)
	}
	u.settle()
	if st := u.wantLeader(false); st.Leader == nil || st.Leader.Node != b {
		t.Fatalf("after the leader went: leader %+v, want %s", st.Leader, b)
	}
	if u.f.opCount("children") != 0 || u.f.opCount("create") != 0 || u.f.opCount("delete") != 0 {
		t.Fatalf("the walk re-read the queue or wrote: %v", u.f.ops)
	}
}

// A predecessor that vanishes before its watch is set makes the follower
// read the queue again, never delete and recreate its node (CURATOR-645).
func TestQueuePredecessorGoneBeforeWatch(t *testing.T) {
	u := newUnit(t, Config{})
	lead := u.other(0x2000, "web-1")
	u.f.fail("get", "/e/"+lead, zk.ErrNoNode, false)
	u.settle()
	if len(u.ours()) != 1 {
		t.Fatalf("own nodes %v, want 1", u.ours())
	}
	if n := u.f.opCount("delete"); n != 0 {
		t.Fatalf("%d deletes: the follower must not recreate its node", n)
	}
	u.wantLeader(false)
}

// A create whose reply is lost is adopted once the live session is known to
// own the node (CURATOR-498).
func TestQueueLostCreateReplyAdopted(t *testing.T) {
	u := newUnit(t, Config{})
	u.f.fail("create", "/e/_c_", zk.ErrConnectionClosed, true)
	if err := u.settleErr(); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("settle = %v, want the lost reply", err)
	}
	if u.core().pending == nil || u.core().pending.uuid == "" {
		t.Fatal("no pending create after a lost reply")
	}
	u.settle()
	u.wantLeader(true)
	if ours := u.ours(); len(ours) != 1 || u.f.opCount("create /e/_c_") != 1 {
		t.Fatalf("own nodes %v after adopting; creates %d", ours, u.f.opCount("create /e/_c_"))
	}
	if !strings.Contains(u.log.String(), "adopted a node whose create reply was lost") {
		t.Fatal("adoption not logged")
	}
}

// A node with our protected id but another session's owner is an older
// session's retried create: delete it, never adopt it (CURATOR-498).
func TestQueueLostCreateOfOlderSessionDeleted(t *testing.T) {
	u := newUnit(t, Config{})
	var stray string
	u.f.before = func(op, p string) {
		if op == "create" && strings.HasPrefix(p, "/e/_c_") && stray == "" {
			// The request reached the server only after the session that
			// sent it was replaced: the node belongs to someone else.
			stray = u.f.put(p, "me", 0x3000, zk.FlagEphemeralSequential)
		}
	}
	u.f.fail("create", "/e/_c_", zk.ErrConnectionClosed, false)
	_ = u.settleErr()
	u.f.before = nil
	u.settle()
	if u.f.exists(stray) {
		t.Fatalf("the older session's node %s was not deleted", stray)
	}
	if ours := u.ours(); len(ours) != 1 {
		t.Fatalf("own nodes %v, want one fresh node", ours)
	}
	u.wantLeader(true)
}

// The session expires between the create and the resolution of its lost
// reply: the pending create is given up and a node with its id, if any, is
// an orphan (CURATOR-45/79); the participant rejoins on the new session.
func TestQueueSessionChangeWhilePending(t *testing.T) {
	u := newUnit(t, Config{})
	u.f.fail("create", "/e/_c_", zk.ErrConnectionClosed, true)
	_ = u.settleErr()
	id := u.core().pending.uuid
	u.expire(0x1001)
	u.settle()
	if !u.core().old[id] {
		t.Fatal("the abandoned create's id is not remembered as an orphan")
	}
	ours := u.ours()
	if len(ours) != 1 || protectedID(ours[0]) == id {
		t.Fatalf("own nodes %v: want one node of the new session with a new id", ours)
	}
	st := u.wantLeader(true)
	if st.SessionID != 0x1001 {
		t.Fatalf("session %x, want 0x1001", st.SessionID)
	}
}

// The lowest node carries our name but another session owns it
// (CURATOR-696): delete and rejoin, never lead on it.
func TestQueueClaimForeignOwner(t *testing.T) {
	u := newUnit(t, Config{})
	var node string
	u.f.before = func(op, p string) {
		if op == "get" && strings.HasPrefix(p, "/e/_c_") && node == "" {
			// As if the server had the node from an older session's
			// retried create.
			node = strings.TrimPrefix(p, "/e/")
			u.f.mu.Lock()
			u.f.nodes[p].stat.EphemeralOwner = 0x4000
			u.f.mu.Unlock()
		}
	}
	u.settle()
	u.f.before = nil
	if node == "" || u.f.exists("/e/"+node) {
		t.Fatalf("the foreign-owned node %q was not deleted", node)
	}
	if ours := u.ours(); len(ours) != 1 || ours[0] == node {
		t.Fatalf("own nodes %v, want one new node", ours)
	}
	u.wantLeader(true)
}

// The session expires in the middle of the claim: the own node is gone with
// it, the claim reads nothing, and the next step rejoins on the new session.
func TestQueueSessionExpiresMidClaim(t *testing.T) {
	u := newUnit(t, Config{})
	expired := false
	u.f.before = func(op, p string) {
		if op == "get" && strings.HasPrefix(p, "/e/_c_") && !expired {
			expired = true
			u.expire(0x1001)
		}
	}
	u.settle()
	u.f.before = nil
	st := u.wantLeader(true)
	if st.SessionID != 0x1001 || len(u.ours()) != 1 {
		t.Fatalf("after expiry mid-claim: session %x, own nodes %v", st.SessionID, u.ours())
	}
}

// The election path itself vanishes (an ensemble that lost its data):
// recreate it and rejoin (CURATOR-724).
func TestQueuePathVanished(t *testing.T) {
	u := newUnit(t, Config{})
	u.settle()
	u.f.remove("/e/" + u.core().node)
	u.f.remove("/e")
	for u.event().kind != evOwn { // the members watch fires too
	}
	u.settle()
	if !u.f.exists("/e") || len(u.ours()) != 1 {
		t.Fatalf("path recreated: %v, own nodes %v", u.f.exists("/e"), u.ours())
	}
	u.wantLeader(true)
}

func TestQueueForeignModeRefused(t *testing.T) {
	u := newUnit(t, Config{})
	lock := u.f.put("/e/_c_"+newTestUUID(0x2000)+"-lock-", "curator", 0x2000, zk.FlagEphemeralSequential)
	u.settle()
	st := u.e.Status()
	if st.Misconfigured == "" || st.IsLeader || len(u.ours()) != 0 {
		t.Fatalf("status %+v, own nodes %v: want refused, no node", st, u.ours())
	}
	u.f.remove(lock)
	u.clk.Advance(misconfigRetry)
	u.settle()
	if st := u.wantLeader(true); st.Misconfigured != "" {
		t.Fatalf("still misconfigured: %q", st.Misconfigured)
	}
}

func TestQueueReleaseRequeuesAtTheBack(t *testing.T) {
	u, first := newLeaderWithFollower(t)
	if err := u.e.r.release(LossReleased); err != nil {
		t.Fatal(err)
	}
	u.settle()
	st := u.wantLeader(false)
	if u.f.exists("/e/"+first) || st.Leader == nil || st.Leader.ID != "web-2" {
		t.Fatalf("after release: old node exists %v, leader %+v", u.f.exists("/e/"+first), st.Leader)
	}
	if err := u.e.r.release(LossReleased); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("release on a follower = %v, want ErrNotLeader", err)
	}
}

func TestQueueLeaveDeletesEverything(t *testing.T) {
	u := newUnit(t, Config{})
	u.f.fail("create", "/e/_c_", zk.ErrConnectionClosed, true)
	_ = u.settleErr()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := u.e.leave(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := u.f.children("/e"); len(kids) != 0 {
		t.Fatalf("left %v behind", kids)
	}
	if u.f.exists("/e.advertise/" + sessionHex(unitSession)) {
		t.Fatal("meta node left behind")
	}
}

func TestQueueSelectorTerm(t *testing.T) {
	u := newUnit(t, Config{Mode: ModeSelector, Term: time.Second})
	u.settle()
	first := u.core().node
	// Alone at the end of the term: keep leading, watch for a newcomer.
	u.clk.Advance(time.Second)
	if ev := u.event(); ev.kind != evTerm {
		t.Fatalf("event %v, want evTerm", ev.kind)
	}
	u.settle()
	u.wantLeader(true)
	u.other(0x2000, "web-2")
	for ev := u.event(); ev.kind != evChildren; ev = u.event() {
		u.settle()
	}
	u.settle()
	st := u.wantLeader(false)
	if u.f.exists("/e/"+first) || st.Leader.ID != "web-2" {
		t.Fatalf("term over with a successor: old node kept %v, leader %s", u.f.exists("/e/"+first), st.Leader.ID)
	}
}

// Config.TermEnd wraps the term's release: it runs while this participant
// still leads and its node exists, the node goes when it calls release,
// and a TermEnd that never calls it is released after all.
func TestQueueSelectorTermEnd(t *testing.T) {
	for _, calls := range []bool{true, false} {
		var steps []string
		var u *unit
		hook := func(ctx context.Context, release func(context.Context) error) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("TermEnd's context has no deadline")
			}
			steps = append(steps, fmt.Sprintf("before: leads %v, node kept %v", u.e.Status().IsLeader, u.f.exists("/e/"+u.core().node)))
			if !calls {
				return nil
			}
			err := release(ctx)
			steps = append(steps, fmt.Sprintf("after: leads %v, err %v", u.e.Status().IsLeader, err))
			return release(ctx) // a second call does nothing
		}
		u = newUnit(t, Config{Mode: ModeSelector, Term: time.Second, TermEnd: hook})
		u.settle()
		first := u.core().node
		u.other(0x2000, "web-2")
		u.clk.Advance(time.Second)
		for len(steps) == 0 {
			u.event()
			u.settle()
		}
		u.settle()
		st := u.wantLeader(false)
		want := []string{"before: leads true, node kept true"}
		if calls {
			want = append(want, "after: leads false, err <nil>")
		}
		if !slices.Equal(steps, want) || u.f.exists("/e/"+first) || st.Leader == nil || st.Leader.ID != "web-2" {
			t.Fatalf("calls %v: steps %q, want %q; old node kept %v, leader %+v", calls, steps, want, u.f.exists("/e/"+first), st.Leader)
		}
	}
}

func TestQueueParticipantsSkipsVanished(t *testing.T) {
	u := newUnit(t, Config{})
	a := u.other(0x2000, "a")
	u.other(0x2001, "b")
	u.f.fail("get", "/e/"+a, zk.ErrNoNode, false) // gone while we read (CURATOR-358)
	ps, err := u.e.r.participants(u.f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].ID != "b" || !ps[0].IsLeader {
		t.Fatalf("participants %+v, want b alone, leading", ps)
	}
	u.f.remove("/e/" + a)
	u.f.mu.Lock()
	for p := range u.f.nodes {
		if strings.HasPrefix(p, "/e") {
			delete(u.f.nodes, p)
		}
	}
	u.f.mu.Unlock()
	if ps, err := u.e.r.participants(u.f); err != nil || len(ps) != 0 {
		t.Fatalf("missing path: %v, %v; want none and no error (CURATOR-436)", ps, err)
	}
}

// The leader reads each newcomer's id once and counts ids that several
// nodes carry; a burst of joins costs one read of the queue.
func TestQueueDuplicateIDsCounted(t *testing.T) {
	rec := &countRecorder{}
	u := newUnit(t, Config{ID: "web-1", Recorder: rec})
	u.settle()
	u.other(0x2000, "web-1")
	u.other(0x2001, "web-2")
	u.other(0x2002, "web-2")
	u.event()
	u.f.resetOps()
	u.clk.Advance(membersDelay)
	for u.event().kind != evMembersDue {
	}
	u.settle()
	if rec.dups != 2 {
		t.Fatalf("duplicate ids counted %d times, want 2 (web-1 and web-2)", rec.dups)
	}
	if n := u.f.opCount("children"); n != 1 {
		t.Fatalf("%d reads of the queue for a burst of 3 joins, want 1", n)
	}
	if st := u.e.Status(); st.Participants != 4 {
		t.Fatalf("participants %d, want 4", st.Participants)
	}
}

// Joining a long queue costs a follower a handful of reads, not one per
// node (every joiner reading every node made N joins cost N^2/2 reads):
// the leader counts duplicate ids instead (queue_members.go).
func TestQueueJoinReadsAreBounded(t *testing.T) {
	rec := &countRecorder{}
	u := newUnit(t, Config{ID: "web-1", Recorder: rec})
	const n = 100
	for i := range n {
		u.other(int64(0x2000+i), "other-"+strconv.Itoa(i))
	}
	u.settle()
	if reads := u.e.Counters().Reads; reads > 10 {
		t.Errorf("joining a queue of %d cost %d reads, want at most 10", n+1, reads)
	}
	if u.e.viewed().ownToken == 0 {
		t.Error("own fencing token not read")
	}
}

type countRecorder struct {
	nopRecorder
	dups int
}

func (r *countRecorder) DuplicateID(string) { r.dups++ }

// ZooKeeper refuses to delete the own node (a parent ACL without DELETE):
// the release fails and the leader leads on, consistent with the node that
// is still there, instead of everyone following a leader nobody runs.
func TestQueueReleaseRefusedKeepsLeading(t *testing.T) {
	u, node := newLeaderWithFollower(t)
	u.f.fail("delete", "/e/"+node, zk.ErrNoAuth, false)
	if err := u.e.r.release(LossReleased); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("release = %v, want the refusal", err)
	}
	u.settle()
	if st := u.wantLeader(true); st.Node != node || !u.f.exists("/e/"+node) {
		t.Fatalf("after a refused release: leading on %s, node kept %v; want %s", st.Node, u.f.exists("/e/"+node), node)
	}
}

// The delete's reply is lost but the server applied it: the node is gone,
// so the participant rejoins at the back and the successor leads.
func TestQueueReleaseReplyLost(t *testing.T) {
	u, node := newLeaderWithFollower(t)
	u.f.fail("delete", "/e/"+node, zk.ErrConnectionClosed, true)
	if err := u.e.r.release(LossReleased); err == nil {
		t.Fatal("release with a lost reply reported success")
	}
	u.settle()
	st := u.wantLeader(false)
	if st.Leader == nil || st.Leader.ID != "web-2" || len(u.ours()) != 1 || u.ours()[0] == node {
		t.Fatalf("leader %+v, own nodes %v: want web-2 leading and one new node of ours", st.Leader, u.ours())
	}
}

// A participant that never made a node leaves at once, connected or not.
func TestLeaveWithNothingReturnsAtOnce(t *testing.T) {
	u := newUnit(t, Config{})
	u.setState(zksession.StateConnecting)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := u.e.leave(ctx); err != nil {
		t.Fatalf("leave = %v", err)
	}
}

// A participant with a node and no connection says what is left behind.
func TestLeaveDisconnectedSaysWhatIsLeft(t *testing.T) {
	u := newUnit(t, Config{})
	u.settle()
	u.setState(zksession.StateSuspended)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := u.e.leave(ctx)
	if err == nil || !strings.Contains(err.Error(), u.core().node) || !strings.Contains(err.Error(), "expires") {
		t.Fatalf("leave = %v, want the node named and its fate", err)
	}
}

// A selector on a latch path lists the latch nodes in their own order with
// their own leader, not the first node by the selector's sort (issue 12).
func TestQueueParticipantsOnAMisconfiguredPath(t *testing.T) {
	u := newUnit(t, Config{Mode: ModeSelector})
	u.f.put("/e/_c_"+newTestUUID(0x2000)+"-latch-", "web-1", 0x2000, zk.FlagEphemeralSequential)
	u.f.put("/e/_c_"+newTestUUID(0x0001)+"-latch-", "web-2", 0x0001, zk.FlagEphemeralSequential)
	u.f.put("/e/_c_"+newTestUUID(0x3000)+"-lock-", "sel-1", 0x3000, zk.FlagEphemeralSequential)
	ps, err := u.e.r.participants(u.f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("%s:%v", p.ID, p.IsLeader))
	}
	if want := "web-1:true web-2:false sel-1:true"; strings.Join(got, " ") != want {
		t.Fatalf("participants %v, want %s", got, want)
	}
}
