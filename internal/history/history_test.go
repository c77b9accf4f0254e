package history

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
)

var (
	t0   = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	web1 = &election.Participant{ID: "web-1", Node: "_c_a-latch-0000000003", Session: 0x11, FencingToken: 4294967302}
	web2 = &election.Participant{ID: "web-2", Node: "_c_b-latch-0000000004", Session: 0x22, FencingToken: 4294967310}

	following = election.Status{ID: "web-2", Candidate: true, Why: election.ReasonFollowing, Reason: "following web-1",
		State: zksession.StateConnected, SessionID: 0x22, Joined: true, Leader: web1}
	leading = election.Status{ID: "web-2", Candidate: true, IsLeader: true, Why: election.ReasonLeader, Reason: "leader",
		FencingToken: web2.FencingToken, State: zksession.StateConnected, SessionID: 0x22, Joined: true, Leader: web2}
	connecting = election.Status{ID: "web-2", Candidate: true, Why: election.ReasonNoSession, Reason: "zookeeper connecting",
		State: zksession.StateConnecting}
)

// with returns st changed by f.
func with(st election.Status, f func(*election.Status)) election.Status {
	f(&st)
	return st
}

func TestTransitions(t *testing.T) {
	tests := []struct {
		name      string
		prev, st  election.Status
		want      []Kind
		wantToken []int64 // FencingToken of each entry Add records for the transition
	}{
		{name: "nothing changed", prev: following, st: following},
		{name: "lease renewed: not a transition", prev: leading,
			st: with(leading, func(s *election.Status) { s.LeaseRemaining = time.Second })},
		{name: "handoff to this participant", prev: following, st: leading,
			want: []Kind{Leader, Elected}, wantToken: []int64{web2.FencingToken, web2.FencingToken}},
		{name: "released: revoked, then the new leader", prev: leading,
			st: following, want: []Kind{Revoked, Leader}, wantToken: []int64{web2.FencingToken, web1.FencingToken}},
		{name: "lease expired, same leader node", prev: leading,
			st: with(leading, func(s *election.Status) {
				s.IsLeader, s.FencingToken, s.Why, s.Reason = false, 0, election.ReasonLeaseExpired, "lease expired"
				s.State = zksession.StateSuspended
			}),
			want: []Kind{Revoked, State}, wantToken: []int64{web2.FencingToken, web2.FencingToken}},
		{name: "another leader", prev: following,
			st:   with(following, func(s *election.Status) { s.Leader, s.Reason = web2, "following web-2" }),
			want: []Kind{Leader}, wantToken: []int64{web2.FencingToken}},
		{name: "leader gone", prev: following,
			st: with(following, func(s *election.Status) {
				s.Leader, s.Why, s.Reason = nil, election.ReasonNoLeader, "no leader known"
			}),
			want: []Kind{Leader}, wantToken: []int64{0}},
		{name: "same leader re-read with its advertise", prev: following,
			st: with(following, func(s *election.Status) {
				l := *web1
				l.Advertise = "10.0.0.7:8080"
				s.Leader = &l
			})},
		{name: "suspended", prev: following,
			st:   with(following, func(s *election.Status) { s.State = zksession.StateSuspended }),
			want: []Kind{State}, wantToken: []int64{web1.FencingToken}},
		{name: "new session", prev: following,
			st:   with(following, func(s *election.Status) { s.SessionID = 0x23 }),
			want: []Kind{State}, wantToken: []int64{web1.FencingToken}},
		{name: "withdrawn", prev: following,
			st: with(following, func(s *election.Status) {
				s.Candidate, s.Why, s.Reason = false, election.ReasonWithdrawn, "not a candidate (withdrawn)"
			}),
			want: []Kind{State}, wantToken: []int64{web1.FencingToken}},
		{name: "misconfigured", prev: following,
			st: with(following, func(s *election.Status) {
				s.Misconfigured, s.Why, s.Reason = "lock nodes on a latch path", election.ReasonMisconfigured, "misconfigured: lock nodes on a latch path"
			}),
			want: []Kind{State}, wantToken: []int64{web1.FencingToken}},
		{name: "reason alone: a follower shutting down", prev: following,
			st: with(following, func(s *election.Status) {
				s.Why, s.Reason = election.ReasonShuttingDown, "shutting down"
			}),
			want: []Kind{State}, wantToken: []int64{web1.FencingToken}},
		{name: "joined and connected: the leader and the state", prev: connecting, st: following,
			want: []Kind{Leader, State}, wantToken: []int64{web1.FencingToken, web1.FencingToken}},
		{name: "a reason the leader change explains: no State", st: following,
			prev: with(following, func(s *election.Status) {
				s.Leader, s.Why, s.Reason = nil, election.ReasonNoLeader, "no leader known"
			}),
			want: []Kind{Leader}, wantToken: []int64{web1.FencingToken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Transitions(tt.prev, tt.st); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Transitions = %v, want %v", got, tt.want)
			}
			l := New(10, clocktest.NewFake(t0))
			l.Add(tt.prev)
			before := len(l.Last(0))
			l.Add(tt.st)
			added := l.Last(0)[before:]
			if len(added) != len(tt.want) {
				t.Fatalf("Add recorded %d entries, want %d: %+v", len(added), len(tt.want), added)
			}
			for i, e := range added {
				if e.Kind != tt.want[i] {
					t.Errorf("entry %d: kind %q, want %q", i, e.Kind, tt.want[i])
				}
				if got, want := e.FencingToken, tt.wantToken[i]; got != want {
					t.Errorf("entry %d (%s): token %d, want %d", i, e.Kind, got, want)
				}
				if got, want := e.HasToken, tt.wantToken[i] != 0; got != want {
					t.Errorf("entry %d (%s): HasToken %v, want %v", i, e.Kind, got, want)
				}
				if e.Reason != tt.st.Reason || e.State != tt.st.State || e.Session != tt.st.SessionID || e.Candidate != tt.st.Candidate {
					t.Errorf("entry %d (%s) = %+v; want the reason, state, session and candidacy of %+v", i, e.Kind, e, tt.st)
				}
			}
		})
	}
}

func TestFirstStatus(t *testing.T) {
	tests := []struct {
		name string
		st   election.Status
		want []Entry
	}{
		{name: "connecting", st: connecting, want: []Entry{
			{Seq: 1, Time: t0, Kind: State, Reason: "zookeeper connecting", State: zksession.StateConnecting, Candidate: true},
		}},
		{name: "a leader known", st: following, want: []Entry{
			{Seq: 1, Time: t0, Kind: State, LeaderID: "web-1", HasLeader: true, FencingToken: web1.FencingToken, HasToken: true,
				Reason: "following web-1", State: zksession.StateConnected, Candidate: true, Session: 0x22},
			{Seq: 2, Time: t0, Kind: Leader, LeaderID: "web-1", HasLeader: true, FencingToken: web1.FencingToken, HasToken: true,
				Reason: "following web-1", State: zksession.StateConnected, Candidate: true, Session: 0x22},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(10, clocktest.NewFake(t0))
			l.Add(tt.st)
			if got := l.Last(0); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Last(0) =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// flap adds n leader changes (web-1, web-2, web-1, ...) after a first status.
func flap(l *Log, n int) {
	l.Add(following)
	for i := range n {
		st := following
		if i%2 == 0 {
			st.Leader = web2
		}
		l.Add(st)
	}
}

func TestLast(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		changes int // leader changes after the first status (2 entries)
		n       int
		want    []uint64 // Seq of the entries returned
	}{
		{name: "empty", size: 4, changes: -1, n: 0, want: []uint64{}},
		{name: "all, not full", size: 4, changes: 1, n: 0, want: []uint64{1, 2, 3}},
		{name: "n larger than held", size: 4, changes: 1, n: 10, want: []uint64{1, 2, 3}},
		{name: "negative n is all", size: 4, changes: 1, n: -3, want: []uint64{1, 2, 3}},
		{name: "newest n", size: 4, changes: 1, n: 2, want: []uint64{2, 3}},
		{name: "full: the oldest dropped", size: 4, changes: 5, n: 0, want: []uint64{4, 5, 6, 7}},
		{name: "wrapped, newest 3", size: 4, changes: 7, n: 3, want: []uint64{7, 8, 9}},
		{name: "size 1", size: 1, changes: 3, n: 0, want: []uint64{5}},
		{name: "size 0 is the default", size: 0, changes: 200, n: 0, want: seqs(103, 202)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.size, clocktest.NewFake(t0))
			if tt.changes >= 0 {
				flap(l, tt.changes)
			}
			got := []uint64{}
			for _, e := range l.Last(tt.n) {
				got = append(got, e.Seq)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Last(%d) seqs = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func seqs(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestFeedUntilClosed(t *testing.T) {
	l := New(DefaultSize, ticking{clocktest.NewFake(t0)})
	ch := make(chan election.Status)
	done := make(chan struct{})
	go func() {
		l.Feed(ch)
		close(done)
	}()
	for _, st := range []election.Status{connecting, following, leading} {
		ch <- st
	}
	close(ch)
	<-done
	var got []string
	for _, e := range l.Last(0) {
		got = append(got, fmt.Sprintf("%d %s %s %s", e.Seq, e.Time.Format(time.TimeOnly), e.Kind, e.LeaderID))
	}
	want := []string{
		"1 10:00:01 state ",
		"2 10:00:02 leader web-1",
		"3 10:00:02 state web-1",
		"4 10:00:03 leader web-2",
		"5 10:00:03 elected web-2",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries =\n%q\nwant\n%q", got, want)
	}
}

// ticking is the fake clock moved on a second at every reading, so that
// each status fed gets a time of its own.
type ticking struct{ *clocktest.Fake }

func (c ticking) Now() time.Time {
	c.Advance(time.Second)
	return c.Fake.Now()
}
