package election

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// A leader leaving for good hands leadership to the newest participant it
// can move the others behind (docs/design/handover.md, "Handoff"): on Resign's leave
// and on a withdrawal, not on a release; never past a Curator peer; with
// HandoffNext, not at all.
func TestHandOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handoff HandoffPolicy
		peers   []string
		leave   func(u *unit) error
		next    string   // who is first once the leader's node is gone
		moved   []string // whose nodes were deleted to make it so
	}{
		{"resign", "", []string{"old-2", "old-3", "new-1"},
			func(u *unit) error { return u.e.leave(context.Background()) }, "new-1", []string{"old-2", "old-3"}},
		{"withdraw", HandoffNewest, []string{"old-2", "new-1"},
			func(u *unit) error { return u.e.setCandidate(context.Background(), false, LossAppUnhealthy) },
			"new-1", []string{"old-2"}},
		{"release keeps the queue's order", "", []string{"old-2", "new-1"},
			func(u *unit) error { return u.e.r.release(LossReleased) }, "old-2", nil},
		{"next", HandoffNext, []string{"old-2", "old-3", "new-1"},
			func(u *unit) error { return u.e.leave(context.Background()) }, "old-2", nil},
		{"a Curator peer is never moved", "", []string{"old-2", "curator-1", "new-1"},
			func(u *unit) error { return u.e.leave(context.Background()) }, "old-2", nil},
		{"up to the first Curator peer", "", []string{"old-2", "old-3", "curator-1", "new-1"},
			func(u *unit) error { return u.e.leave(context.Background()) }, "old-3", []string{"old-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, nodes := handoffUnit(t, tc.handoff, tc.peers...)
			if err := tc.leave(u); err != nil {
				t.Fatal(err)
			}
			queue := sortQueue(u.f.children("/e"), latchTag)
			if len(queue) == 0 || queue[0] != nodes[tc.next] {
				t.Fatalf("queue %v after the leader left, want %s (%s) first", queue, tc.next, nodes[tc.next])
			}
			for _, id := range tc.moved {
				if u.f.exists("/e/" + nodes[id]) {
					t.Errorf("%s still queued ahead of %s", id, tc.next)
				}
			}
			for _, id := range tc.peers {
				if !slices.Contains(tc.moved, id) && !u.f.exists("/e/"+nodes[id]) {
					t.Errorf("%s was moved, and need not have been", id)
				}
			}
		})
	}
}

func handoffUnit(t *testing.T, h HandoffPolicy, peers ...string) (*unit, map[string]string) {
	t.Helper()
	u, nodes := switchoverUnit(t, peers...)
	u.core().cfg.Handoff = h
	if h == "" {
		u.core().cfg.Handoff = HandoffNewest // New's default
	}
	u.leaderReads()
	u.wantLeader(true)
	return u, nodes
}

// A participant that re-queued (after a release, or a selector's term)
// sits at the back of the queue but joined no later: the newest is the one
// whose session joined last.
func TestHandOffPicksTheNewestSession(t *testing.T) {
	u, nodes := handoffUnit(t, HandoffNewest, "old-2", "new-1")
	// old-2 released earlier: its node is now behind new-1's, its session older.
	u.f.remove("/e/" + nodes["old-2"])
	nodes["old-2"] = u.other(0x2000, "old-2")
	u.leaderReads()
	if err := u.e.leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if queue := sortQueue(u.f.children("/e"), latchTag); len(queue) != 2 || queue[0] != nodes["new-1"] {
		t.Fatalf("queue %v after the leader left, want new-1 (%s) first and old-2 unmoved", queue, nodes["new-1"])
	}
}

// The newest participant whose application is down is passed over for the
// newest one whose application is up; if none is newer than the next in
// line, the next in line takes over (docs/design/handover.md, "Handoff").
func TestHandOffSkipsAnApplicationThatIsDown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		down  []string
		next  string
		moved []string
	}{
		{"the newest is up", nil, "new-3", []string{"old-1", "mid-2"}},
		{"the newest is down", []string{"new-3"}, "mid-2", []string{"old-1"}},
		{"all but the next in line are down", []string{"new-3", "mid-2"}, "old-1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, nodes := handoffUnit(t, HandoffNewest, "old-1", "mid-2", "new-3")
			for i, id := range []string{"old-1", "mid-2", "new-3"} {
				if slices.Contains(tc.down, id) {
					if _, err := u.f.Set("/e.advertise/"+sessionHex(int64(0x2000+i)), []byte(`{"id":"`+id+`","app_up":false}`), -1); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := u.e.leave(context.Background()); err != nil {
				t.Fatal(err)
			}
			queue := sortQueue(u.f.children("/e"), latchTag)
			if len(queue) == 0 || queue[0] != nodes[tc.next] {
				t.Fatalf("queue %v after the leader left, want %s (%s) first", queue, tc.next, nodes[tc.next])
			}
			for _, id := range []string{"old-1", "mid-2", "new-3"} {
				if moved := !u.f.exists("/e/" + nodes[id]); moved != slices.Contains(tc.moved, id) {
					t.Errorf("%s moved: %v, want %v", id, moved, !moved)
				}
			}
			// Falling back to the next in line past newer ones is said.
			said := strings.Contains(u.log.String(), "no newer participant's application is up")
			if want := tc.next == "old-1"; said != want {
				t.Errorf("logged the fallback to the next in line: %v, want %v", said, want)
			}
		})
	}
}

// With two participants, or when the next in line joined last, the leaving
// leader's hand-over reads nothing: the roster knows the queue and when
// each session joined.
func TestHandOffReadsNothingWhenTheNextIsTheNewest(t *testing.T) {
	t.Run("two participants", func(t *testing.T) {
		u, _ := handoffUnit(t, HandoffNewest, "next-1")
		u.f.resetOps()
		u.e.r.handOff(context.Background())
		if ops := u.f.allOps(); len(ops) != 0 {
			t.Fatalf("hand-over sent %v, want nothing", ops)
		}
	})
	t.Run("the next in line is the newest", func(t *testing.T) {
		u, nodes := handoffUnit(t, HandoffNewest, "old-2", "new-1")
		u.f.remove("/e/" + nodes["old-2"]) // old-2 re-queues: behind new-1, its session older
		u.other(0x2000, "old-2")
		u.leaderReads()
		u.f.resetOps()
		u.e.r.handOff(context.Background())
		if ops := u.f.allOps(); len(ops) != 0 {
			t.Fatalf("hand-over sent %v, want nothing", ops)
		}
	})
}

// With Config.AppChecked the meta node says whether the application is
// up: down until SetAppUp says otherwise, rewritten once per change.
func TestAppStatePublished(t *testing.T) {
	u := newUnit(t, Config{AppChecked: true})
	u.settle()
	meta := "/e.advertise/" + sessionHex(unitSession)
	read := func() metaData {
		data, _, err := u.f.Get(meta)
		if err != nil {
			t.Fatal(err)
		}
		return parseMeta(data)
	}
	if m := read(); m.AppUp == nil || *m.AppUp {
		t.Fatalf("meta %+v before SetAppUp, want app_up false", m)
	}
	u.e.SetAppUp(true)
	u.f.resetOps()
	u.settle()
	u.settle()
	if m := read(); m.AppUp == nil || !*m.AppUp {
		t.Fatalf("meta %+v after SetAppUp(true), want app_up true", m)
	}
	if n := u.f.opCount("set " + meta); n != 1 {
		t.Fatalf("%d writes of the meta node, want 1: %v", n, u.f.allOps())
	}
	if m := (metaData{}); !m.appUp() {
		t.Fatal("a participant that publishes nothing must count as up")
	}
}

// A join the leader's roster has not read yet (within the 100 ms it
// gathers joins, as in a rollout) is read at the hand-over.
func TestHandOffReadsAQueueThatChanged(t *testing.T) {
	u, nodes := handoffUnit(t, HandoffNewest, "old-2", "old-3")
	nodes["new-1"] = u.other(0x3000, "new-1")
	u.f.put("/e.advertise/"+sessionHex(0x3000), `{"id":"new-1"}`, 0x3000, zk.FlagEphemeral)
	if ev := u.event(); ev.kind != evMembers { // the join is seen, its read not due yet
		t.Fatalf("event %v, want evMembers", ev.kind)
	}
	if err := u.e.leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if queue := sortQueue(u.f.children("/e"), latchTag); len(queue) == 0 || queue[0] != nodes["new-1"] {
		t.Fatalf("queue %v after the leader left, want new-1 (%s) first", queue, nodes["new-1"])
	}
}
