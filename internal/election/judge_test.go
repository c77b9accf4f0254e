package election

import (
	"log/slog"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election/zksession"
)

// leaderFixture is an Elector whose view says it holds the lowest node of
// session 7, on a session connected with a fresh lease.
func leaderFixture(t *testing.T, cfg Config) (*Elector, *fakeSession, *clocktest.Fake) {
	t.Helper()
	clk := clocktest.NewFake(time.Unix(1000, 0))
	s := &fakeSession{clock: clk, log: slog.New(slog.DiscardHandler), subs: map[chan struct{}]struct{}{},
		state: zksession.StateConnected, authed: true, sessionID: 7, timeout: 4 * time.Second,
		leaseSID: 7, leaseEnd: clk.Now().Add(unitLease)}
	if cfg.Path == "" {
		cfg.Path = "/e"
	}
	cfg.ID = "me"
	cfg.Clock = clk
	e, err := New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.v = view{holds: true, joined: true, node: "n", nodeSession: 7, token: 42, claimedAt: clk.Now(), standing: true}
	return e, s, clk
}

func TestJudgeLeaseEndsLeadership(t *testing.T) {
	e, _, clk := leaderFixture(t, Config{})
	if st := e.Status(); !st.IsLeader || st.FencingToken != 42 {
		t.Fatalf("fresh lease: IsLeader=%v token=%d reason=%q", st.IsLeader, st.FencingToken, st.Reason)
	}
	clk.Advance(unitLease)
	st := e.Status()
	if st.IsLeader || st.Reason != "lease expired" || st.FencingToken != 0 {
		t.Fatalf("lease over: IsLeader=%v reason=%q token=%d", st.IsLeader, st.Reason, st.FencingToken)
	}
}

func TestJudgeSuspendPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy SuspendPolicy
		want   bool
	}{{Hold, true}, {StepDown, false}} {
		e, s, _ := leaderFixture(t, Config{OnSuspend: tc.policy})
		s.state = zksession.StateSuspended
		if got := e.Status().IsLeader; got != tc.want {
			t.Errorf("%s while suspended with a live lease: IsLeader=%v, want %v", tc.policy, got, tc.want)
		}
	}
}

func TestJudgeExpiredAndNewSession(t *testing.T) {
	e, s, _ := leaderFixture(t, Config{})
	s.state, s.sessionID = zksession.StateExpired, 0
	if e.Status().IsLeader {
		t.Fatal("leader while the session is expired")
	}
	s.state, s.sessionID, s.leaseSID = zksession.StateConnected, 8, 8
	if st := e.Status(); st.IsLeader || st.Reason != "session changed" {
		t.Fatalf("node of session 7 on session 8: IsLeader=%v reason=%q", st.IsLeader, st.Reason)
	}
}

func TestJudgeClaimDelayAndDrain(t *testing.T) {
	e, _, clk := leaderFixture(t, Config{ClaimDelay: 300 * time.Millisecond})
	if st := e.Status(); st.IsLeader || st.Reason != "claim delay" {
		t.Fatalf("inside claim delay: IsLeader=%v reason=%q", st.IsLeader, st.Reason)
	}
	clk.Advance(300 * time.Millisecond)
	if !e.Status().IsLeader {
		t.Fatal("not leader after the claim delay")
	}
	e.Drain()
	if st := e.Status(); st.IsLeader || st.Reason != "shutting down" {
		t.Fatalf("after Drain: IsLeader=%v reason=%q", st.IsLeader, st.Reason)
	}
}

func TestJudgeMisconfigured(t *testing.T) {
	e, _, _ := leaderFixture(t, Config{})
	e.v.misconfigured = "lock nodes on a latch path"
	if e.Status().IsLeader {
		t.Fatal("leader on a misconfigured path")
	}
}

func BenchmarkStatus(b *testing.B) {
	clk := clocktest.NewFake(time.Unix(1000, 0))
	s := &fakeSession{clock: clk, log: slog.New(slog.DiscardHandler), subs: map[chan struct{}]struct{}{},
		state: zksession.StateConnected, authed: true, sessionID: 7, leaseSID: 7, leaseEnd: clk.Now().Add(time.Hour)}
	e, _ := New(s, Config{Path: "/e", ID: "me", Clock: clk})
	e.v = view{holds: true, joined: true, node: "n", nodeSession: 7, leader: &Participant{ID: "me"}, standing: true}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !e.Status().IsLeader {
			b.Fatal("not leader")
		}
	}
}
