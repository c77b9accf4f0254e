package election

import (
	"context"
	"slices"
	"testing"
)

// A leader leaving for good hands leadership to the newest participant it
// can move the others behind (docs/DESIGN.md, "Handoff"): on Resign's leave
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
	if err := u.e.leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if queue := sortQueue(u.f.children("/e"), latchTag); len(queue) != 2 || queue[0] != nodes["new-1"] {
		t.Fatalf("queue %v after the leader left, want new-1 (%s) first and old-2 unmoved", queue, nodes["new-1"])
	}
}
