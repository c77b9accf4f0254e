package main

import (
	"testing"

	"github.com/electd/electd/internal/election"
)

// A resumed electd serves its API once settled: a probe queued meanwhile
// must not get the start's 503 from a leader whose lease is being proved.
func TestSettled(t *testing.T) {
	const sid = 0x100
	self := &election.Participant{ID: "web-1", Session: sid}
	other := &election.Participant{ID: "web-2", Session: 0x200}
	for _, c := range []struct {
		name string
		st   election.Status
		want bool
	}{
		{"no session yet", election.Status{Why: election.ReasonNoSession, SessionID: sid}, false},
		{"not joined", election.Status{Why: election.ReasonNotJoined, SessionID: sid}, false},
		{"no leader known", election.Status{Why: election.ReasonNoLeader, SessionID: sid}, false},
		{"own node leads, lease not proved", election.Status{Why: election.ReasonFollowing, SessionID: sid, Leader: self}, false},
		{"leads", election.Status{Why: election.ReasonLeader, IsLeader: true, SessionID: sid, Leader: self}, true},
		{"follows another", election.Status{Why: election.ReasonFollowing, SessionID: sid, Leader: other}, true},
		{"withdrawn", election.Status{Why: election.ReasonWithdrawn, SessionID: sid}, true},
		{"duplicate id", election.Status{Why: election.ReasonDuplicateID, SessionID: sid}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := settled(c.st); got != c.want {
				t.Errorf("settled = %v, want %v", got, c.want)
			}
		})
	}
}
