package forward

import (
	"context"

	"github.com/electd/electd/internal/election"
)

// Yielder is the proxy's graceful hand-over: *proxy.Proxy. Yield stops
// handing traffic to the application, waits for what it has (bounded),
// runs f and routes again.
type Yielder interface {
	Yield(ctx context.Context, f func(context.Context) error) error
}

// Elector is the election as the HTTP API and the candidacy drive it:
// *election.Elector, or exec mode's execmode.Yielding around it.
type Elector interface {
	Status() election.Status
	Observe(ctx context.Context) <-chan election.Status
	Await(ctx context.Context) (<-chan struct{}, error)
	Participants(ctx context.Context) ([]election.Participant, error)
	Release(ctx context.Context) error
	Switchover(ctx context.Context, to string) error
	SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error
}

// Yielding is the Elector whose hand-overs go through the proxy's Yield:
// a release, a switchover and a withdrawal let the requests the
// application has finish, and hold the new ones for the next leader,
// before leadership goes (docs/DESIGN.md, "Forwarding": hand-overs).
type Yielding struct {
	Elector
	Proxy Yielder
}

// Release yields, then releases.
func (y Yielding) Release(ctx context.Context) error {
	return y.Proxy.Yield(ctx, y.Elector.Release)
}

// Switchover yields, then hands leadership to the participant to. A
// switchover refused (the target is unknown) held requests for no longer
// than the engine took to say so; they then go to this participant's
// application again.
func (y Yielding) Switchover(ctx context.Context, to string) error {
	return y.Proxy.Yield(ctx, func(ctx context.Context) error { return y.Elector.Switchover(ctx, to) })
}

// SetCandidate yields before a withdrawal; standing again needs no yield.
func (y Yielding) SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error {
	if candidate {
		return y.Elector.SetCandidate(ctx, true, why)
	}
	return y.Proxy.Yield(ctx, func(ctx context.Context) error { return y.Elector.SetCandidate(ctx, false, why) })
}
