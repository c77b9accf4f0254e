package proxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// Hand-overs (docs/design/proxy.md, "Forwarding"): Yield around a graceful
// one, the step-down when the application refuses connections, and the
// proxy's state as people see it.

// Yield stops handing traffic to the application, waits until the HTTP
// requests it has are answered (at most DrainTimeout, or until ctx ends),
// runs f, typically the election's release, and then routes again:
// traffic that arrived meanwhile was held and goes to the new leader.
// Release, switchover, withdrawal and shutdown should all go through it,
// so that a graceful hand-over fails no request (docs/design/proxy.md,
// "Forwarding"). Upgraded and spliced connections are not waited for:
// they are cut when leadership ends. Under a context from ReportDrain,
// what the drain did is reported there.
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
	NoteDrain(ctx, p.drain(ctx))
	return f(ctx)
}

// Drained is what a hand-over's drain did.
type Drained struct {
	// Waited is how long Yield waited for the application's requests.
	Waited time.Duration
	// Left counts the requests the application still had when the drain
	// gave up (DrainTimeout, or the caller's context): they are cut when
	// leadership ends. 0 when every request was answered.
	Left int
}

type drainKey struct{}

type drainReport struct {
	mu sync.Mutex
	d  Drained
	ok bool
}

func (r *drainReport) set(d Drained) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.d, r.ok = d, true
}

// NoteDrain records d in the report ReportDrain put in ctx, if any.
func NoteDrain(ctx context.Context, d Drained) {
	if r, ok := ctx.Value(drainKey{}).(*drainReport); ok {
		r.set(d)
	}
}

// ReportDrain returns a context under which Yield reports its drain, and
// the function that reads the report (false when no Yield ran under it:
// no proxy, or the hand-over did not reach it).
func ReportDrain(ctx context.Context) (context.Context, func() (Drained, bool)) {
	r := &drainReport{}
	return context.WithValue(ctx, drainKey{}, r), func() (Drained, bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.d, r.ok
	}
}

func (p *Proxy) drain(ctx context.Context) Drained {
	start := p.clock.Now()
	timeout, stop := clock.Deadline(p.clock, p.cfg.DrainTimeout)
	defer stop()
	for {
		p.mu.Lock()
		if p.inflight == 0 {
			p.mu.Unlock()
			return Drained{Waited: p.clock.Now().Sub(start)}
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
			return Drained{Waited: p.clock.Now().Sub(start), Left: n}
		case <-ctx.Done():
			return Drained{Waited: p.clock.Now().Sub(start), Left: n}
		}
	}
}

// stepDown asks the election, once per leadership, to give it up: the
// application refuses connections (a pod being deleted stops its
// application before its electd), or it hangs (checkApp).
func (p *Proxy) stepDown(r Route, why string, err error) {
	p.mu.Lock()
	if p.stepped == r.Token {
		p.mu.Unlock()
		return
	}
	p.stepped = r.Token
	p.mu.Unlock()
	if why == StepDownRefused && p.http != nil {
		// The application stops: nothing more goes out on a connection it
		// kept alive, which it may close with a request on it unanswered
		// (HTTP/1.1 cannot say which); the next request dials, and a
		// refusal proves it unprocessed.
		p.http.app.CloseIdleConnections()
		p.http.appDirect.CloseIdleConnections()
		p.http.appH2.CloseIdleConnections()
	}
	p.rec.SteppedDown(why)
	reason := "the application at " + p.cfg.App + " refuses connections"
	if why == StepDownTimeouts {
		reason = fmt.Sprintf("the application at %s answered no request, nor %d checks in a row (%s, within %v each)",
			p.cfg.App, p.cfg.AppTimeoutStepDown, p.http.check.what(), p.http.check.timeout)
	}
	p.log.Warn(reason+": asking the election to step down", "fencing_token", r.Token, "err", err)
	p.lead.StepDown(reason)
}

// appAnswered counts the application's answers: one that arrives while
// checkApp probes proves that it does not hang.
func (p *Proxy) appAnswered() { p.answers.Add(1) }

// appTimedOut: the application answered nothing within ResponseTimeout.
// That alone moves nothing (a slow path is a property of a request); it
// starts checkApp while this leadership lasts, unless one runs or one
// passed less than a probe timeout ago: timeouts cost at most one probe
// per probe timeout.
func (p *Proxy) appTimedOut(r Route, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checking || p.term == nil || p.term.token != r.Token || p.clock.Now().Before(p.nextCheck) {
		return
	}
	p.checking = true
	term := p.term.ctx
	p.log.Debug("no answer within the response timeout: checking the application", "app", p.cfg.App, "err", err)
	p.checks.Go(func() { p.checkApp(term, r) })
}

// checkApp probes the application (checker), a probe timeout apart from
// start to start, until one passes or the application answers anything:
// AppTimeoutStepDown failures in a row step leadership r down. It ends
// with the leadership or Serve.
func (p *Proxy) checkApp(term context.Context, r Route) {
	ctx, cancel := context.WithCancel(term)
	defer cancel()
	defer context.AfterFunc(p.stopping, cancel)()
	c := p.http.check
	var next time.Time // when the next check may start, once this one ended well
	defer func() {
		p.mu.Lock()
		p.checking, p.nextCheck = false, next
		p.mu.Unlock()
	}()
	answers := p.answers.Load()
	for failed := 0; ; {
		start := p.clock.Now()
		err := p.checkOnce(ctx, c, r)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil || p.answers.Load() != answers:
			next = start.Add(c.timeout)
			return
		}
		failed++
		p.log.Warn("the application failed a check", "app", p.cfg.App, "check", c.what(),
			"failed", failed, "of", p.cfg.AppTimeoutStepDown, "err", err)
		if failed >= p.cfg.AppTimeoutStepDown {
			p.stepDown(r, StepDownTimeouts, err)
			return
		}
		if wait := c.timeout - p.clock.Now().Sub(start); wait > 0 { // it failed fast: refused, reset
			due, stop := clock.Deadline(p.clock, wait)
			select {
			case <-due:
			case <-ctx.Done():
			}
			stop()
		}
	}
}

// checkOnce runs one of c's probes within its timeout (on the proxy's clock).
func (p *Proxy) checkOnce(ctx context.Context, c *checker, r Route) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := p.clock.AfterFunc(c.timeout, func() { cancel(fmt.Errorf("no answer within %v", c.timeout)) })
	defer t.Stop()
	err := c.probe(ctx, r)
	if cause := context.Cause(ctx); err != nil && cause != nil && ctx.Err() != nil {
		return cause
	}
	return err
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
	// PeerConnections counts the connections this proxy holds open to
	// other participants' proxies.
	PeerConnections int `json:"peer_connections"`
	// Buffered is the bytes of request bodies buffered now.
	Buffered int64 `json:"buffered"`
	// InFlight counts HTTP requests with the application now.
	InFlight int `json:"in_flight"`
}

// State returns the proxy's state now, routed as a new request would be.
func (p *Proxy) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.routeLocked()
	st := State{Mode: p.cfg.Mode, Route: "hold", Held: p.held, InFlight: p.inflight,
		Connections: p.conns.Open() + p.peers.Open(), PeerConnections: p.PeerConns(), Buffered: p.Buffered()}
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
func (p *Proxy) Open() int { return p.conns.Open() + p.peers.Open() }

// PeerConns counts the connections this proxy holds open to other
// participants' proxies (HTTP mode).
func (p *Proxy) PeerConns() int {
	if p.http == nil {
		return 0
	}
	return p.http.pool.Open()
}

// Served counts the requests (HTTP mode) or connections (TCP mode) that
// ended, however they ended: whoever wants to know whether the proxy has
// been quiet compares two readings.
func (p *Proxy) Served() uint64 { return p.served.Load() }

// Buffered is the bytes of request bodies buffered now (HTTP mode).
func (p *Proxy) Buffered() int64 {
	if p.http == nil {
		return 0
	}
	return p.http.buffers.InUse()
}
