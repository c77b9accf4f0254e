package follow

import (
	"context"
	"fmt"

	"github.com/electd/electd/internal/election"
)

// Elector is the election as the HTTP API and the candidacy drive it:
// *election.Elector, or Yielding around it.
type Elector interface {
	Status() election.Status
	Observe(ctx context.Context) <-chan election.Status
	Await(ctx context.Context) (<-chan struct{}, error)
	Participants(ctx context.Context) ([]election.Participant, error)
	Release(ctx context.Context) error
	Switchover(ctx context.Context, to string) error
	SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error
}

// Yielder is a part that must let go before leadership does: Yield stops
// what it does for the leader (bounded), runs f, and lets it go on after.
// The forwarding proxy's lets the application's requests finish and holds
// new ones for the next leader (forward.Sidecar); exec mode's stops the
// command (*execmode.Supervisor).
type Yielder interface {
	Yield(ctx context.Context, f func(context.Context) error) error
}

// Yielding is the Elector whose hand-overs go through Yield of each of
// yields, the first outermost: a release, a switchover and a withdrawal
// let them go first (docs/design/proxy-app.md, "Hand-overs";
// docs/design/handover.md, "Exec mode"); standing again needs no yield.
type Yielding struct {
	Elector
	yields []Yielder
	// check refuses a switchover the engine would refuse before anything
	// yields: exec mode's, where a typo in ?to= must not stop the command.
	check bool
}

// NewYielding returns el driven through yields, the first outermost. check
// says to refuse a switchover that is bound to fail before anything yields.
func NewYielding(el Elector, check bool, yields ...Yielder) Yielding {
	return Yielding{Elector: el, yields: yields, check: check}
}

// yield runs f inside every Yield, the first outermost.
func (y Yielding) yield(ctx context.Context, f func(context.Context) error) error {
	for i := len(y.yields) - 1; i >= 0; i-- {
		inner, yl := f, y.yields[i]
		f = func(ctx context.Context) error { return yl.Yield(ctx, inner) }
	}
	return f(ctx)
}

// Release yields, then releases.
func (y Yielding) Release(ctx context.Context) error {
	return y.yield(ctx, y.Elector.Release)
}

// Switchover yields, then hands leadership to the participant to. A
// switchover the engine refuses held the proxy's requests for no longer
// than the engine took to say so; with check, what can be told to fail
// before is refused before anything yields, the engine checks the rest.
func (y Yielding) Switchover(ctx context.Context, to string) error {
	if y.check {
		if err := precheckSwitchover(ctx, y.Elector, to); err != nil {
			return err
		}
	}
	return y.yield(ctx, func(ctx context.Context) error { return y.Elector.Switchover(ctx, to) })
}

// SetCandidate yields before a withdrawal; standing again needs no yield.
func (y Yielding) SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error {
	if candidate {
		return y.Elector.SetCandidate(ctx, true, why)
	}
	return y.yield(ctx, func(ctx context.Context) error { return y.Elector.SetCandidate(ctx, false, why) })
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
