// Package forward joins the forwarding proxy (internal/proxy) to the
// election (internal/election), which know nothing of each other
// (docs/design/proxy.md, "Forwarding"): the Sidecar is the proxy as the daemon
// runs it, on the election seen as the proxy's Leadership; the hand-overs
// go through its Yield so that the requests the application has finish
// first, and a step-down when the application refuses connections
// withdraws this participant until it takes them again. cmd/electd wires
// a Sidecar, working or disabled.
package forward

import (
	"context"
	"sync/atomic"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/proxy"
)

// Election is the election as the proxy follows it and hands it over:
// *election.Elector.
type Election interface {
	// Status is computed from memory and lease-checked at call time.
	Status() election.Status
	// Observe sends the status at once, then one per change, until ctx
	// ends or the election stops.
	Observe(ctx context.Context) <-chan election.Status
	// SetCandidate withdraws (false) or restores (true) candidacy; the
	// shutdown's hand-over withdraws (Sidecar.HandOver).
	SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error
	// SetAppUp publishes whether the application takes connections, for
	// the hand-over to a participant that is ready (docs/design/handover.md,
	// "Handoff"). It must not block.
	SetAppUp(up bool)
}

// Leadership is the election as proxy.Leadership: Route from Status at
// call time, Changed from Observe (Watch feeds it), StepDown to whatever
// OnStepDown set.
type Leadership struct {
	proxy.Broadcast
	el   Election
	step atomic.Pointer[func(reason string)]
}

var _ proxy.Leadership = (*Leadership)(nil)

// NewLeadership returns the Leadership of el; Watch must run for Changed
// to fire.
func NewLeadership(el Election) *Leadership { return &Leadership{el: el} }

// Watch announces every change of the election's status until ctx ends or
// the election stops, and once more then.
func (l *Leadership) Watch(ctx context.Context) {
	for range l.el.Observe(ctx) {
		l.Notify()
	}
	l.Notify()
}

// Route implements proxy.Leadership. A follower forwards to the leader's
// proxy as the leader published it; a participant that does not lead but
// is still the leader it knows of (it is handing over, or its lease
// lapsed), in this session or an earlier one (the view of itself that a
// new session has not replaced yet: the published proxy is its own), has
// nowhere to send traffic: a forward to its own peer port would only be
// bounced back, round after round.
func (l *Leadership) Route() proxy.Route {
	st := l.el.Status()
	switch {
	case st.IsLeader:
		return proxy.Route{Leading: true, ID: st.ID, Token: st.FencingToken, Lease: st.LeaseRemaining, Election: st.Election}
	case st.Leader == nil, st.Leader.Session == st.SessionID, st.Proxy != "" && st.Leader.Proxy == st.Proxy:
		return proxy.Route{Election: st.Election}
	}
	return proxy.Route{ID: st.Leader.ID, Token: st.Leader.FencingToken, Addr: st.Leader.Proxy, Election: st.Election}
}

// StepDown implements proxy.Leadership: it calls the function OnStepDown
// set, which must not block; nothing before that.
func (l *Leadership) StepDown(reason string) {
	if f := l.step.Load(); f != nil {
		(*f)(reason)
	}
}

// OnStepDown sets what StepDown calls.
func (l *Leadership) OnStepDown(f func(reason string)) { l.step.Store(&f) }
