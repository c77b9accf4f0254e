package follow

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
)

var _ Elector = (*election.Elector)(nil)

// The pre-check refuses, before anything yields, what the engine would
// refuse anyway; anything it cannot tell passes to the engine.
func TestPrecheckSwitchover(t *testing.T) {
	queued := []election.Participant{{ID: "p0", IsLeader: true}, {ID: "p1"}}
	latch := election.Status{Mode: election.ModeLatch, IsLeader: true}
	for _, tc := range []struct {
		name string
		st   election.Status
		ps   []election.Participant
		err  error // Participants'
		to   string
		want error // nil: passes
	}{
		{"race mode", election.Status{Mode: election.ModeRace, IsLeader: true}, nil, nil, "p1", election.ErrNoQueue},
		{"follower", election.Status{Mode: election.ModeLatch}, nil, nil, "p1", election.ErrNotLeader},
		{"unknown target", latch, queued, nil, "p9", election.ErrSwitchover},
		{"queued target", latch, queued, nil, "p1", nil},
		{"queue unreadable", latch, nil, errors.New("zk down"), "p9", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := electiontest.New(tc.st)
			q.SetParticipants(tc.ps)
			q.Fail(electiontest.Participants, tc.err)
			err := precheckSwitchover(context.Background(), q, tc.to)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("precheckSwitchover(%q) = %v, want %v", tc.to, err, tc.want)
			}
		})
	}
}

// fakeYielder records around what it runs, in the log the election's
// calls go to.
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
	el := electiontest.New(election.Status{Mode: election.ModeLatch, IsLeader: true})
	el.SetParticipants([]election.Participant{{ID: "a", IsLeader: true}, {ID: "b"}})
	el.Fail(electiontest.Switchover, errors.New("refused"))
	el.Intercept(func(_ context.Context, call string) error {
		if call != "participants" { // a read, not a hand-over
			calls = append(calls, call)
		}
		return nil
	})
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
