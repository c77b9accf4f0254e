package follow

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/electd/electd/internal/election"
)

var _ Elector = (*election.Elector)(nil)

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

// The pre-check refuses, before anything yields, what the engine would
// refuse anyway; anything it cannot tell passes to the engine.
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

// fakeElector records calls; a fakeYielder records around what it runs.
type fakeElector struct {
	Elector
	st    election.Status
	calls *[]string
}

func (f fakeElector) Status() election.Status { return f.st }

func (f fakeElector) Participants(context.Context) ([]election.Participant, error) {
	return []election.Participant{{ID: "a", IsLeader: true}, {ID: "b"}}, nil
}

func (f fakeElector) Release(context.Context) error {
	*f.calls = append(*f.calls, "release")
	return nil
}

func (f fakeElector) Switchover(_ context.Context, to string) error {
	*f.calls = append(*f.calls, "switchover "+to)
	return errors.New("refused")
}

func (f fakeElector) SetCandidate(_ context.Context, candidate bool, why election.LossReason) error {
	if candidate {
		*f.calls = append(*f.calls, "stand")
	} else {
		*f.calls = append(*f.calls, "withdraw "+string(why))
	}
	return nil
}

type fakeYielder struct {
	name  string
	calls *[]string
}

func (y fakeYielder) Yield(ctx context.Context, f func(context.Context) error) error {
	*y.calls = append(*y.calls, y.name+" yields")
	err := f(ctx)
	*y.calls = append(*y.calls, y.name+" again")
	return err
}

// Every hand-over goes through every yield, the first outermost; standing
// again through none; with check, a switchover to nobody yields nothing.
func TestYieldingWrapsEveryHandOver(t *testing.T) {
	var calls []string
	el := fakeElector{st: election.Status{Mode: election.ModeLatch, IsLeader: true}, calls: &calls}
	y := NewYielding(el, false, fakeYielder{"proxy", &calls}, fakeYielder{"command", &calls})
	ctx := context.Background()
	_ = y.Release(ctx)
	if err := y.Switchover(ctx, "b"); err == nil || err.Error() != "refused" {
		t.Errorf("Switchover's error %v, want the engine's", err)
	}
	_ = y.SetCandidate(ctx, false, election.LossShutdown)
	_ = y.SetCandidate(ctx, true, "")
	around := func(what string) []string {
		return []string{"proxy yields", "command yields", what, "command again", "proxy again"}
	}
	want := slices.Concat(around("release"), around("switchover b"), around("withdraw shutdown"), []string{"stand"})
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}

	calls = nil
	y = NewYielding(el, true, fakeYielder{"command", &calls})
	if err := y.Switchover(ctx, "nobody"); !errors.Is(err, election.ErrSwitchover) || len(calls) != 0 {
		t.Errorf("a switchover to nobody: %v after %q, want ErrSwitchover before any yield", err, calls)
	}
}
