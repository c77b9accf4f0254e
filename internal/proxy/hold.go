package proxy

import (
	"context"
	"time"

	"github.com/electd/electd/internal/clock"
)

// holder is one request's or connection's wait for somewhere to go
// (docs/design/proxy.md, "Forwarding": hold). Its budget starts when the request
// (or connection) arrives and spans every wait and retry, a refused dial
// or a peer that would not take it included, so that it is answered
// within the hold time; a forwarded request brings what is left of its
// budget from the proxy before.
type holder struct {
	p      *Proxy
	budget time.Duration
	start  time.Time

	expired <-chan struct{}
	stopT   func()
	in      bool // counted in p.held
}

func newHolder(p *Proxy, budget time.Duration) *holder {
	h := &holder{}
	h.init(p, budget)
	return h
}

// init readies a holder that is part of something else (a request).
func (h *holder) init(p *Proxy, budget time.Duration) {
	*h = holder{p: p, budget: min(budget, p.cfg.HoldTime), start: p.clock.Now()}
}

// enter counts the traffic as held and arms the budget's end on the first
// call; false at MaxHeld.
func (h *holder) enter() bool {
	if h.in {
		return true
	}
	p := h.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held >= p.cfg.MaxHeld {
		return false
	}
	if h.expired == nil { // before it counts as held: whoever sees it held sees its budget running
		h.expired, h.stopT = clock.Deadline(p.clock, h.remaining())
	}
	p.held++
	h.in = true
	return true
}

// leave stops counting the traffic as held: it goes somewhere now.
func (h *holder) leave() {
	if !h.in {
		return
	}
	h.in = false
	h.p.mu.Lock()
	h.p.held--
	h.p.mu.Unlock()
}

// done ends the hold for good and reports how long it lasted, when it
// waited at all.
func (h *holder) done() {
	h.leave()
	if h.expired != nil {
		h.stopT()
		h.p.rec.Held(h.p.clock.Now().Sub(h.start))
	}
}

// remaining is what is left of the budget.
func (h *holder) remaining() time.Duration {
	return max(h.budget-h.p.clock.Now().Sub(h.start), 0)
}

// wait blocks until wake or ready (either may be nil) is closed, retry
// (when not 0) has passed, the budget runs out (errHoldExpired), ctx
// ends, or the proxy shuts down (errShutdown). Call enter first.
func (h *holder) wait(ctx context.Context, wake, ready <-chan struct{}, retry time.Duration) error {
	var again <-chan struct{}
	if retry > 0 {
		ch, stop := clock.Deadline(h.p.clock, retry)
		defer stop()
		again = ch
	}
	select {
	case <-wake:
	case <-ready:
	case <-again:
	case <-h.expired:
		return errHoldExpired
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-h.p.closed:
		return errShutdown
	}
	return nil
}
