// Package forward joins the forwarding proxy (internal/proxy) to the
// election (internal/election), which know nothing of each other
// (docs/DESIGN.md, "Forwarding"): the election seen as the proxy's
// Leadership, the hand-overs that go through the proxy's Yield so that the
// requests the application has finish first, and the step-down when the
// application refuses connections, which withdraws this participant until
// it takes them again. cmd/electd wires them.
package forward

import (
	"context"
	"sync/atomic"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/proxy"
)

// Election is what Leadership reads: *election.Elector.
type Election interface {
	// Status is computed from memory and lease-checked at call time.
	Status() election.Status
	// Observe sends the status at once, then one per change, until ctx
	// ends or the election stops.
	Observe(ctx context.Context) <-chan election.Status
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
// lapsed) has nowhere to send traffic: forwarding to itself would only
// spend a hop.
func (l *Leadership) Route() proxy.Route {
	st := l.el.Status()
	switch {
	case st.IsLeader:
		return proxy.Route{Leading: true, ID: st.ID, Token: st.FencingToken, Lease: st.LeaseRemaining, Election: st.Election}
	case st.Leader == nil, st.Leader.Session == st.SessionID:
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
