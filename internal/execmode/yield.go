package execmode

import (
	"context"
	"fmt"

	"github.com/electd/electd/internal/election"
)

// Yielding is the Elector as exec mode lets the HTTP API and the candidacy
// drive it: whatever gives leadership up stops the command first
// (Supervisor.Yield), so that the next leader's command never starts while
// this one still runs (docs/DESIGN.md, "Exec mode").
type Yielding struct {
	*election.Elector
	Sup *Supervisor
}

// Release stops the command, then releases.
func (y Yielding) Release(ctx context.Context) error {
	return y.Sup.Yield(ctx, y.Elector.Release)
}

// Switchover refuses what it can tell is bound to fail before it stops the
// command (a typo in ?to= must not stop it); the engine checks the rest.
func (y Yielding) Switchover(ctx context.Context, to string) error {
	if err := precheckSwitchover(ctx, y.Elector, to); err != nil {
		return err
	}
	return y.Sup.Yield(ctx, func(ctx context.Context) error { return y.Elector.Switchover(ctx, to) })
}

// SetCandidate stops the command before a withdrawal; standing again
// needs no stop.
func (y Yielding) SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error {
	if candidate {
		return y.Elector.SetCandidate(ctx, true, why)
	}
	return y.Sup.Yield(ctx, func(ctx context.Context) error { return y.Elector.SetCandidate(ctx, false, why) })
}

// queue is what the switchover pre-check reads of the election.
type queue interface {
	Status() election.Status
	Participants(ctx context.Context) ([]election.Participant, error)
}

// precheckSwitchover returns the engine's errors for a follower, race mode
// and a target that no participant is.
func precheckSwitchover(ctx context.Context, el queue, to string) error {
	st := el.Status()
	switch {
	case st.Mode == election.ModeRace:
		return election.ErrNoQueue
	case !st.IsLeader:
		return election.ErrNotLeader
	}
	ps, err := el.Participants(ctx)
	if err != nil {
		return nil // the engine will say
	}
	for _, p := range ps {
		if p.ID == to {
			return nil
		}
	}
	return fmt.Errorf("%w: no participant has the id %q", election.ErrSwitchover, to)
}
