package electdtest

// What the tests of several participants ask of them together.

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// OneLeader waits until exactly one of ms answers 200 on /healthz/leader
// and every live one names it on /leader, and returns it. Two leaders at
// once fail the test: one that answered 200 and, asked again after
// another did, still answers 200 with the same fencing token (what two
// questions one after the other can prove).
func OneLeader(t testing.TB, ms []*Member, timeout time.Duration) *Member {
	t.Helper()
	var leader *Member
	wait.For(t, timeout, "exactly one leader", func() bool {
		var ls []*Member
		var tokens []int64
		for _, m := range ms {
			if h, ok := m.HealthNow(); ok && h.IsLeader {
				ls = append(ls, m)
				tokens = append(tokens, h.FencingToken)
			}
		}
		if len(ls) > 1 {
			if h, ok := ls[0].HealthNow(); ok && h.IsLeader && h.FencingToken == tokens[0] {
				t.Fatalf("%s (token %d) and %s (token %d) lead at once", ls[0].Name, tokens[0], ls[1].Name, tokens[1])
			}
			return false
		}
		if len(ls) != 1 {
			return false
		}
		// Settled: every live participant names it, so what a test does
		// next starts from one agreed view.
		for _, m := range ms {
			if !m.Alive() {
				continue
			}
			if v, err := m.LeaderNow(); err != nil || v.LeaderID() != ls[0].Name {
				return false
			}
		}
		leader = ls[0]
		return true
	})
	return leader
}

// Leaders lists the live members that answer 200 on /healthz/leader; more
// than one fails the test.
func Leaders(t testing.TB, ms []*Member) []*Member {
	t.Helper()
	var ls []*Member
	for _, m := range ms {
		if m.Alive() && m.Leads() {
			ls = append(ls, m)
		}
	}
	if len(ls) > 1 {
		t.Fatalf("%s and %s both answer 200 on /healthz/leader", ls[0].Name, ls[1].Name)
	}
	return ls
}

// NobodyLeads waits until no member leads and every one says so on
// /leader ("leader": null).
func NobodyLeads(t testing.TB, ms []*Member, timeout time.Duration) {
	t.Helper()
	wait.For(t, timeout, "nobody to lead", func() bool {
		if len(Leaders(t, ms)) > 0 {
			return false
		}
		for _, m := range ms {
			if m.Leader().Leader != nil {
				return false
			}
		}
		return true
	})
}

// WaitOK waits until each of ms answers 200 on GET path, failing the test
// when one exits first or after timeout: /healthz once it serves, /readyz
// once it has a view of the election (the startup probe of
// deploy/k8s/app.yaml).
func WaitOK(t testing.TB, path string, timeout time.Duration, ms ...*Member) {
	t.Helper()
	for _, m := range ms {
		wait.For(t, timeout, m.Name+" "+path, func() bool {
			if !m.Alive() {
				t.Fatalf("%s exited: %v", m.Name, m.ExitErr())
			}
			st, _ := m.Fetch(path)
			return st == http.StatusOK
		})
	}
}

// StartThree starts three participants, p0 to p2, on one path and waits
// until they serve.
func StartThree(t testing.TB, zk, path, mode string, extra ...string) []*Member {
	t.Helper()
	var ms []*Member
	for i := range 3 {
		ms = append(ms, StartMember(t, zk, path, fmt.Sprintf("p%d", i), mode, extra...))
	}
	WaitOK(t, "/healthz", 30*time.Second, ms...)
	return ms
}

// Others is ms without not.
func Others(ms []*Member, not *Member) []*Member {
	var out []*Member
	for _, m := range ms {
		if m != not {
			out = append(out, m)
		}
	}
	return out
}

// ByID is the member named id, or nil.
func ByID(ms []*Member, id string) *Member {
	for _, m := range ms {
		if m.Name == id {
			return m
		}
	}
	return nil
}

// CheckAgreement waits until every member's /leader names leader with one
// fencing token, and checks electd_is_leader on each.
func CheckAgreement(t testing.TB, ms []*Member, leader *Member) {
	t.Helper()
	var views []LeaderView
	wait.For(t, 10*time.Second, "/leader to agree on "+leader.Name, func() bool {
		views = views[:0]
		for _, m := range ms {
			v, err := m.LeaderNow()
			if err != nil || v.Leader == nil || v.Leader.ID != leader.Name {
				return false
			}
			views = append(views, v)
		}
		return true
	})
	for i, v := range views {
		if v.Leader.FencingToken != views[0].Leader.FencingToken || v.Leader.FencingToken <= 0 {
			t.Errorf("%s: fencing token %d, %s says %d", ms[i].Name, v.Leader.FencingToken, ms[0].Name, views[0].Leader.FencingToken)
		}
		if v.Self.IsLeader != (ms[i] == leader) {
			t.Errorf("%s: self.is_leader = %v", ms[i].Name, v.Self.IsLeader)
		}
	}
	for _, m := range ms {
		want := 0.0
		if m == leader {
			want = 1
		}
		if got, err := m.MetricValue("electd_is_leader"); err != nil || got != want {
			t.Errorf("%s: electd_is_leader = %v (%v), want %v", m.Name, got, err, want)
		}
	}
}
