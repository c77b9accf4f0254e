package proxy

import (
	"context"

	"github.com/electd/electd/internal/clock"
)

// Hand-overs (docs/DESIGN.md, "Forwarding"): Yield around a graceful
// one, the step-down when the application refuses connections, and the
// proxy's state as people see it.

// Yield stops handing traffic to the application, waits until the HTTP
// requests it has are answered (at most DrainTimeout, or until ctx ends),
// runs f, typically the election's release, and then routes again:
// traffic that arrived meanwhile was held and goes to the new leader.
// Release, switchover, withdrawal and shutdown should all go through it,
// so that a graceful hand-over fails no request (docs/DESIGN.md,
// "Forwarding"). Upgraded and spliced connections are not waited for:
// they are cut when leadership ends.
func (p *Proxy) Yield(ctx context.Context, f func(context.Context) error) error {
	p.mu.Lock()
	p.yielding++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.yielding--
		p.mu.Unlock()
		p.wake.Notify()
	}()
	p.drain(ctx)
	return f(ctx)
}

func (p *Proxy) drain(ctx context.Context) {
	timeout, stop := clock.Deadline(p.clock, p.cfg.DrainTimeout)
	defer stop()
	for {
		p.mu.Lock()
		if p.inflight == 0 {
			p.mu.Unlock()
			return
		}
		if p.drained == nil {
			p.drained = make(chan struct{})
		}
		ch := p.drained
		n := p.inflight
		p.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			p.log.Warn("hand-over: requests still with the application after the drain timeout; they will be cut",
				"requests", n, "drain_timeout", p.cfg.DrainTimeout)
			return
		case <-ctx.Done():
			return
		}
	}
}

// stepDown asks the election, once per leadership, to give it up: the
// application refuses connections (a pod being deleted stops its
// application before its electd).
func (p *Proxy) stepDown(r Route, err error) {
	p.mu.Lock()
	if p.stepped == r.Token {
		p.mu.Unlock()
		return
	}
	p.stepped = r.Token
	p.mu.Unlock()
	p.rec.SteppedDown()
	p.log.Warn("the application refuses connections: asking the election to step down",
		"app", p.cfg.App, "fencing_token", r.Token, "err", err)
	p.lead.StepDown("the application at " + p.cfg.App + " refuses connections")
}

// State is the proxy's state for /leader and the status page.
type State struct {
	Mode Mode `json:"mode"`
	// Route is where traffic goes now: "app" (this participant leads),
	// "leader" (the leader's proxy), "hold" (nowhere yet; it waits).
	Route string `json:"route"`
	// To is the application's or the leader proxy's address; empty on hold.
	To string `json:"to,omitempty"`
	// Held counts the requests and connections waiting for a leader now.
	Held int `json:"held"`
	// Connections counts open connections, clients' and peers'.
	Connections int `json:"connections"`
	// InFlight counts HTTP requests with the application now.
	InFlight int `json:"in_flight"`
}

// State returns the proxy's state now, routed as a new request would be.
func (p *Proxy) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.lead.Route()
	st := State{Mode: p.cfg.Mode, Route: "hold", Held: p.held, InFlight: p.inflight, Connections: p.conns.Open()}
	switch {
	case r.Leading && p.yielding == 0:
		st.Route, st.To = "app", p.cfg.App
	case !r.Leading && r.Addr != "":
		st.Route, st.To = "leader", r.Addr
	}
	return st
}

// Held counts the requests and connections waiting for a leader now.
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Open counts the open connections, clients' and peers'.
func (p *Proxy) Open() int { return p.conns.Open() }
