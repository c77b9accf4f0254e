package execmode

import (
	"context"
	"errors"
	"testing"

	"github.com/electd/electd/internal/election"
)

// queueStub is a queue with a fixed status and participants.
type queueStub struct {
	st  election.Status
	ps  []election.Participant
	err error
}

func (q queueStub) Status() election.Status { return q.st }
func (q queueStub) Participants(context.Context) ([]election.Participant, error) {
	return q.ps, q.err
}

// The pre-check refuses, before the command is stopped, what the engine
// would refuse anyway; anything it cannot tell passes to the engine.
func TestPrecheckSwitchover(t *testing.T) {
	queued := []election.Participant{{ID: "p0", IsLeader: true}, {ID: "p1"}}
	for _, tc := range []struct {
		name string
		q    queueStub
		to   string
		want error // nil: passes
	}{
		{"race mode", queueStub{st: election.Status{Mode: election.ModeRace, IsLeader: true}}, "p1", election.ErrNoQueue},
		{"follower", queueStub{st: election.Status{Mode: election.ModeLatch}}, "p1", election.ErrNotLeader},
		{"unknown target", queueStub{st: election.Status{Mode: election.ModeLatch, IsLeader: true}, ps: queued}, "p9", election.ErrSwitchover},
		{"queued target", queueStub{st: election.Status{Mode: election.ModeLatch, IsLeader: true}, ps: queued}, "p1", nil},
		{"queue unreadable", queueStub{st: election.Status{Mode: election.ModeLatch, IsLeader: true}, err: errors.New("zk down")}, "p9", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := precheckSwitchover(context.Background(), tc.q, tc.to)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("precheckSwitchover(%q) = %v, want %v", tc.to, err, tc.want)
			}
		})
	}
}
