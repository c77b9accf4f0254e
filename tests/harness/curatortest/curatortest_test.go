package curatortest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/curatortest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

const agree = 10 * time.Second // deadline for Curator participants to agree after a change

// leads is the condition "Curator says leader is want, in this queue, and isLeader is me==want".
func leads(me, want string, queue ...string) func(curatortest.Status) bool {
	return func(s curatortest.Status) bool {
		return s.Leader == want && s.IsLeader == (me == want) && slices.Equal(s.Participants, queue)
	}
}

func mustStatus(t *testing.T, p *curatortest.Participant, cond func(curatortest.Status) bool, what string) curatortest.Status {
	t.Helper()
	s, err := p.WaitStatus(agree, cond)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return s
}

func waitEvents(t *testing.T, p *curatortest.Participant, want ...bool) {
	t.Helper()
	if err := wait.Until(context.Background(), agree, 10*time.Millisecond, func() error {
		ev := p.Events()
		got := make([]bool, len(ev))
		for i, e := range ev {
			got[i] = e.Leader
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s: events %v, want leader flags %v", p, ev, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestTwoParticipants: two Curator participants agree on one leader in both modes; a release
// hands leadership to the other and re-queues at the back; closing the leader makes the other
// lead.
func TestTwoParticipants(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{Servers: 1, TickTime: 500 * time.Millisecond})
	for _, mode := range []string{curatortest.Latch, curatortest.Selector} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			path := "/curatortest/two-" + mode
			a := curatortest.Start(t, ens.ConnectString(), path, mode, "a", 0)
			b := curatortest.Start(t, ens.ConnectString(), path, mode, "b", 0)
			t.Logf("JVM start to READY: a %v, b %v (compile or cache: %v)", a.StartupTime(), b.StartupTime(), curatortest.CompileTime())

			mustStatus(t, a, leads("a", "a", "a", "b"), "a first")
			mustStatus(t, b, leads("b", "a", "a", "b"), "b sees a")
			if l, err := b.Leading(); err != nil || l {
				t.Fatalf("b.Leading() = %v, %v; want false", l, err)
			}
			if l, err := a.Leading(); err != nil || !l {
				t.Fatalf("a.Leading() = %v, %v; want true", l, err)
			}

			start := time.Now()
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
			mustStatus(t, b, leads("b", "b", "b", "a"), "after a released, b")
			t.Logf("release handoff a -> b seen after %v", time.Since(start))
			mustStatus(t, a, leads("a", "b", "b", "a"), "after a released, a")
			waitEvents(t, a, true, false)
			waitEvents(t, b, true)

			start = time.Now()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			mustStatus(t, a, leads("a", "a", "a"), "after b closed, a")
			t.Logf("close handoff b -> a seen after %v", time.Since(start))
			waitEvents(t, a, true, false, true)
			waitEvents(t, b, true, false)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}

	// A killed leader keeps its node until its session times out (4 s); then the other leads.
	t.Run("kill", func(t *testing.T) {
		t.Parallel()
		path := "/curatortest/kill"
		a := curatortest.Start(t, ens.ConnectString(), path, curatortest.Latch, "a", 0)
		b := curatortest.Start(t, ens.ConnectString(), path, curatortest.Latch, "b", 0)
		mustStatus(t, b, leads("b", "a", "a", "b"), "b sees a")
		a.Kill()
		killed := time.Now()
		if s, err := b.Status(); err != nil || s.Leader != "a" {
			t.Fatalf("right after the kill: %v, %v; want a still listed as leader (its session lives)", s, err)
		}
		mustStatus(t, b, leads("b", "b", "b"), "after a's session expired, b")
		if d := time.Since(killed); d < 2*time.Second {
			t.Errorf("b led %v after a was killed; a session of 4 s cannot have expired yet", d)
		} else {
			t.Logf("b leads %v after a was killed (session timeout 4 s)", d)
		}
		if _, err := a.Status(); err == nil {
			t.Errorf("a killed JVM answered status")
		}
	})

	// Selector terms: leadership alternates between two participants.
	t.Run("selector-term", func(t *testing.T) {
		t.Parallel()
		path := "/curatortest/term"
		a := curatortest.Start(t, ens.ConnectString(), path, curatortest.Selector, "a", 300*time.Millisecond)
		b := curatortest.Start(t, ens.ConnectString(), path, curatortest.Selector, "b", 300*time.Millisecond)
		if err := wait.Until(context.Background(), agree, 20*time.Millisecond, func() error {
			if na, nb := leaderEvents(a), leaderEvents(b); na < 3 || nb < 3 {
				return fmt.Errorf("a led %d times (%v), b %d times (%v); want 3 each", na, a.Events(), nb, b.Events())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("a led %d times, b %d times", leaderEvents(a), leaderEvents(b))
		if err := a.Close(); err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
}

func leaderEvents(p *curatortest.Participant) int {
	n := 0
	for _, e := range p.Events() {
		if e.Leader {
			n++
		}
	}
	return n
}
