package election

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/testkit"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// unit is one Elector on a fakeZK and a fakeClock, stepped by the test
// itself (no Run goroutine): each recipe step and error path is exercised
// deterministically, in milliseconds.
type unit struct {
	t   *testing.T
	f   *fakeZK
	clk *clocktest.Fake
	s   *fakeSession
	e   *Elector
	log *testkit.Buffer
}

const unitSession = 0x1000

// newUnit builds an Elector for cfg (path /e and id "me" unless set) on a
// fake ZooKeeper where session 0x1000 is connected with a long lease.
func newUnit(t *testing.T, cfg Config) *unit {
	t.Helper()
	u := &unit{t: t, f: newFakeZK(unitSession), clk: clocktest.NewFake(time.Unix(1000, 0)), log: &testkit.Buffer{}}
	logger := slog.New(slog.NewTextHandler(u.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	u.s = &fakeSession{
		cfg: zksession.Config{SessionTimeout: 4 * time.Second}, conn: u.f, log: logger, clock: u.clk,
		subs: map[chan struct{}]struct{}{}, done: make(chan struct{}),
		state: zksession.StateConnected, authed: true, hadSess: true, sessionID: unitSession, timeout: 4 * time.Second,
		leaseSID: unitSession, leaseEnd: u.clk.Now().Add(time.Hour),
	}
	if cfg.Path == "" {
		cfg.Path = "/e"
	}
	if cfg.ID == "" {
		cfg.ID = "me"
	}
	e, err := New(u.s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	u.e = e
	t.Cleanup(func() {
		if !e.started.Load() {
			close(e.done) // stops the watch forwarders; Run closes it itself
		}
		if t.Failed() {
			t.Logf("elector log:\n%s", u.log.String())
		}
	})
	return u
}

// settle steps until quiet and fails the test on an error.
func (u *unit) settle() {
	u.t.Helper()
	if err := u.e.settle(); err != nil {
		u.t.Fatalf("settle: %v", err)
	}
}

// settleErr steps until quiet and returns the error.
func (u *unit) settleErr() error { return u.e.settle() }

// event waits for the next watch or timer event and hands it to the recipe,
// as Run would; it fails the test when none comes.
func (u *unit) event() event {
	u.t.Helper()
	select {
	case ev := <-u.e.events:
		u.e.r.handle(ev)
		return ev
	case <-time.After(5 * time.Second):
		u.t.Fatal("no watch or timer event within 5s")
	}
	return event{}
}

// noEvent checks that no event is queued right now.
func (u *unit) noEvent() {
	u.t.Helper()
	select {
	case ev := <-u.e.events:
		u.t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

// expire ends the session as the server does and connects a new one.
func (u *unit) expire(next int64) {
	u.f.expire(next)
	u.s.mu.Lock()
	u.s.sessionID, u.s.leaseSID = next, next
	u.s.mu.Unlock()
}

// reconfigure changes the session's credentials after New, as the Elector
// reads them there.
func (u *unit) reconfigure(f func(*zksession.Config)) {
	f(&u.s.cfg)
	u.e.acl = nodeACLFor(u.s.cfg.Auth, u.s.cfg.AuthPrevious)
	u.e.pol = aclPolicyFor(u.s.cfg)
}

// setState sets the session's connection state.
func (u *unit) setState(st zksession.State) {
	u.s.mu.Lock()
	u.s.state = st
	u.s.mu.Unlock()
}

// ours lists the children of the election path owned by the live session.
func (u *unit) ours() []string {
	var out []string
	for _, k := range u.f.children(u.e.cfg.Path) {
		_, st, err := u.f.Get(nodePath(u.e.cfg.Path, k))
		if err == nil && st.EphemeralOwner == u.s.ID() {
			out = append(out, k)
		}
	}
	return out
}

// other adds a participant node of another session in front of ours, as a
// Curator or electd peer would, and returns its name.
func (u *unit) other(sid int64, id string) string {
	name := u.f.put(nodePath(u.e.cfg.Path, nodePrefix(u.e.cfg.Mode, newTestUUID(sid))), id, sid, zk.FlagEphemeralSequential)
	return strings.TrimPrefix(name, u.e.cfg.Path+"/")
}

func newTestUUID(n int64) string {
	return strings.Replace("00000000-0000-4000-8000-000000000000", "00000000", leftPad(n), 1)
}

func leftPad(n int64) string {
	s := strings.Repeat("0", 8) + strings.TrimPrefix(sessionHex(n), "0x")
	return s[len(s)-8:]
}

func (u *unit) wantLeader(want bool) Status {
	u.t.Helper()
	st := u.e.Status()
	if st.IsLeader != want {
		u.t.Fatalf("IsLeader = %v (%s), want %v", st.IsLeader, st.Reason, want)
	}
	return st
}

// newLeaderWithFollower is a unit leading with its node (returned) and one
// other participant, web-2 of session 0x2000, queued behind it.
func newLeaderWithFollower(t *testing.T) (*unit, string) {
	u := newUnit(t, Config{})
	u.settle()
	node := u.core().node
	u.other(0x2000, "web-2")
	u.event()
	u.settle()
	return u, node
}

// leaderReads lets the leader read the queue as it does after a join: its
// children watch fires, the burst delay passes, the read follows.
func (u *unit) leaderReads() {
	u.t.Helper()
	if ev := u.event(); ev.kind != evMembers {
		u.t.Fatalf("event %v, want evMembers", ev.kind)
	}
	u.clk.Advance(membersDelay)
	if ev := u.event(); ev.kind != evMembersDue {
		u.t.Fatalf("event %v, want evMembersDue", ev.kind)
	}
	u.settle()
}

// core is the recipe's shared state, for assertions on the own node.
func (u *unit) core() *core {
	switch r := u.e.r.(type) {
	case *queueRecipe:
		return r.core
	case *raceRecipe:
		return r.core
	}
	u.t.Fatalf("unknown recipe %T", u.e.r)
	return nil
}
