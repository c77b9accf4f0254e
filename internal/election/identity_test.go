package election

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Issue 37, must have 9: participants of one election never disagree on
// its identity, whatever happens to the path. Every participant withdraws,
// the path is removed (ZooKeeper's container reaper, or an operator) and
// another participant creates it anew: without a restart, the unit names
// the new incarnation by the time it names the leader in it, whatever its
// role (docs/design/proxy.md, "Every forward names its election and its leader").
func TestIdentityFollowsTheNewPath(t *testing.T) {
	for _, mode := range []Mode{ModeLatch, ModeSelector, ModeRace} {
		for _, role := range []string{"leader", "follower", "observer"} {
			t.Run(string(mode)+"/"+role, func(t *testing.T) {
				u := newUnit(t, Config{Mode: mode, Observer: role == "observer"})
				other := u.stand(0x2000, "web-2")
				st := u.until("a leader", func(st Status) bool { return st.Leader != nil })
				first := st.Election
				if want := u.pathID(); first != want {
					t.Fatalf("identity %q, want %q", first, want)
				}
				ch := u.e.Observe(context.Background())
				<-ch

				// Every participant withdraws: the path empties, and goes.
				if role != "observer" {
					if err := u.e.setCandidate(context.Background(), false, LossAppUnhealthy); err != nil {
						t.Fatal(err)
					}
				}
				u.f.remove(other)
				u.until("no leader", func(st Status) bool { return st.Leader == nil })
				u.f.remove("/e")

				if role == "leader" { // it makes the path anew and leads
					if err := u.e.setCandidate(context.Background(), true, ""); err != nil {
						t.Fatal(err)
					}
					u.until("leading", func(st Status) bool { return st.IsLeader })
				}
				u.stand(0x2001, "web-3")
				if role == "follower" {
					if err := u.e.setCandidate(context.Background(), true, ""); err != nil {
						t.Fatal(err)
					}
				}
				st = u.until("a leader in the new path", func(st Status) bool {
					return st.Leader != nil && st.Leader.Session == map[bool]int64{true: unitSession, false: 0x2001}[role == "leader"]
				})
				if want := u.pathID(); st.Election != want || st.Election == first {
					t.Fatalf("after the path was made anew the unit names %q, want %q (it named %q before)", st.Election, want, first)
				}
				if got := u.lastObserved(ch); got.Election != st.Election {
					t.Errorf("Observe sent %q last, want %q", got.Election, st.Election)
				}
				if !strings.Contains(u.log.String(), "created anew") {
					t.Error("the new incarnation was not logged")
				}
			})
		}
	}
}

// A participant that listed the path just before it was made anew, and
// then created its node in the new one, names the new one: its node pins
// the path, and it reads the path once more before it leads.
func TestIdentityAfterTheListBeforeTheCreate(t *testing.T) {
	for _, mode := range []Mode{ModeLatch, ModeSelector, ModeRace} {
		t.Run(string(mode), func(t *testing.T) {
			u := newUnit(t, Config{Mode: mode})
			u.f.put("/e/x", "", 0, 0) // the path, made by someone else
			u.f.remove("/e/x")
			first := fmt.Sprintf("/e@0x%x", u.czxid("/e"))
			once := false
			u.f.before = func(op, p string) {
				if op == "create" && strings.HasPrefix(p, "/e/") && !once {
					once = true
					u.f.remove("/e") // the reaper, between the list and the create
					u.f.put("/e/x", "", 0, 0)
					u.f.remove("/e/x")
				}
			}
			st := u.until("leading", func(st Status) bool { return st.IsLeader })
			if !once {
				t.Fatal("the path was not made anew before the create")
			}
			if want := u.pathID(); st.Election != want || st.Election == first {
				t.Fatalf("leading in the new path as %q, want %q (the path was %q when listed)", st.Election, want, first)
			}
		})
	}
}

// stand adds a participant of session sid at the back of the election (in
// race mode: the leader node, when free; "" when taken), making the path when it is
// missing as another participant would, and returns its node's path.
func (u *unit) stand(sid int64, id string) string {
	u.t.Helper()
	if u.e.cfg.Mode == ModeRace {
		if u.f.exists("/e/leader") {
			return "" // it follows: a race follower owns no node
		}
		return u.f.put("/e/leader", id, sid, zk.FlagEphemeral)
	}
	return nodePath("/e", u.other(sid, id))
}

// pathID is the election's identity as the path is now.
func (u *unit) pathID() string { return fmt.Sprintf("/e@0x%x", u.czxid("/e")) }

func (u *unit) czxid(p string) int64 {
	u.t.Helper()
	u.f.mu.Lock()
	defer u.f.mu.Unlock()
	n, ok := u.f.nodes[p]
	if !ok {
		u.t.Fatalf("%s does not exist", p)
	}
	return n.stat.Czxid
}

// until steps the unit as Run would, handing it the watch events as they
// come and stepping again after a failed step, until cond holds.
func (u *unit) until(what string, cond func(Status) bool) Status {
	u.t.Helper()
	deadline := time.After(5 * time.Second)
	for failed := 0; ; {
		err := u.settleErr()
		st := u.e.Status()
		switch {
		case err == nil && cond(st):
			return st
		case err != nil:
			if failed++; failed > settleSteps {
				u.t.Fatalf("waiting for %s: %v", what, err)
			}
			continue // Run steps again after a back-off
		}
		select {
		case ev := <-u.e.events:
			u.e.r.handle(ev)
		case <-deadline:
			u.t.Fatalf("waiting for %s: %+v", what, st)
		}
	}
}

// lastObserved is the latest Status ch holds, once the publisher has
// caught up with the view: the publisher runs only under Run, so it is
// emitted here as Run's publisher would.
func (u *unit) lastObserved(ch <-chan Status) Status {
	u.e.emit(u.e.Status())
	select {
	case st := <-ch:
		return st
	default:
		return Status{}
	}
}
